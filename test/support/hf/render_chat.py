"""The reference side of the chat-template parity corpus (test/integration/chat-template-parity.test.ts).

Usage: render_chat.py TOKENIZER_DIR CONVERSATIONS_JSON

CONVERSATIONS_JSON is a list of {"messages": [...], "tools": [...] | null}. Prints one JSON object:
{"tokenizer": the class that rendered, "note": why not AutoTokenizer's, or null, "renderings": an
entry per conversation}, each entry {"ids": [...], "text": "..."}, the ids as transformers'
apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True) returns them
and the text as it renders with tokenize=False, or {"error": "..."} where it raises.
"""

import json
import sys

from tokenizers import Tokenizer
from transformers import AutoTokenizer, PreTrainedTokenizerFast

# Spaces, digits, CJK, emoji, newlines and tabs: what pre-tokenizers disagree on.
PROBE = "Hello, world!  123 你好，世界 😀\n\tdef f(x): return x"


def render(tokenizer, conversation):
    def apply(tokenize):
        return tokenizer.apply_chat_template(
            conversation["messages"],
            tools=conversation.get("tools"),
            add_generation_prompt=True,
            tokenize=tokenize,
        )

    try:
        out = apply(True)
        text = apply(False)
    except Exception as error:  # the template refused (raise_exception, a TypeError in the template, ...)
        return {"error": f"{type(error).__name__}: {error}"}
    # transformers 5 returns a BatchEncoding by default; 4.x a list of ids.
    ids = out["input_ids"] if hasattr(out, "keys") else out
    return {"ids": list(ids), "text": text}


def load(tokenizer_dir):
    """AutoTokenizer's tokenizer, unless it encodes differently from tokenizer.json as written.

    transformers 5 builds the class tokenizer_config.json names, and LlamaTokenizer replaces
    tokenizer.json's pre-tokenizer with Metaspace (huggingface/transformers#45488): DeepSeek V3
    names LlamaTokenizerFast over a ByteLevel BPE and loses its spaces. As vLLM does for
    deepseek_v3, the tokenizer.json is then loaded as it is (PreTrainedTokenizerFast).
    """
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    written = Tokenizer.from_file(f"{tokenizer_dir}/tokenizer.json")
    if tokenizer.encode(PROBE, add_special_tokens=False) == written.encode(PROBE, add_special_tokens=False).ids:
        return tokenizer, None
    note = f"AutoTokenizer's {type(tokenizer).__name__} encodes differently from tokenizer.json; loaded as PreTrainedTokenizerFast"
    return PreTrainedTokenizerFast.from_pretrained(tokenizer_dir), note


def main():
    tokenizer_dir, conversations_path = sys.argv[1], sys.argv[2]
    tokenizer, note = load(tokenizer_dir)
    with open(conversations_path, encoding="utf-8") as f:
        conversations = json.load(f)
    renderings = [render(tokenizer, c) for c in conversations]
    json.dump({"tokenizer": type(tokenizer).__name__, "note": note, "renderings": renderings}, sys.stdout)


if __name__ == "__main__":
    main()
