"""A Llama checkpoint whose weights are written, not trained, so that its greedy continuation copies
from its context: what `npm run bench -- engine --speculation --copier` serves.

    python make_copier.py <out-dir> [--draft]

Why: speculation's targets are about how much of an accepted token the engine turns into speed,
and that needs a model that copies its context as the models people serve do when they rewrite a
document, quote a source or pass a tool result on. The trained model in reach (llama2.c's
stories260K) continues a span of its prompt at ~3% of positions, and training one that copies did
not form induction heads in the CPU time a session has. So this writes the two-layer circuit
trained models learn for it (an induction head) directly:

- Vocabulary: 64 tokens, <unk> <s> </s> and 61 characters (newline, space to "["; a BPE with no
  merges): token identity has to fit a head of 128 exactly.
- Residual stream (hidden 1024): CUR one-hot [0,64), PREV one-hot [64,128), NEXT one-hot
  [128,192), a constant 1 at 192, the rest 0.
- The bench decoder's kind of shape (Qwen3-like): eight layers, eight query heads of 128 on two
  K/V heads (8 KiB of cache a token), MLPs of 4,096. Only query head 0 of the first two layers is
  used (the other heads' outputs meet zero output columns); the rest are zeros, which cost what
  weights cost: a step reads 487 MB of float32 weights, as a served model's does, past this
  machine's 300 MB L3 (at 108 MB the whole model sat in cache and a 5-position step was bound by
  arithmetic instead).
- RoPE base 1e17: pairs 0-5 turn fast (a position's neighbours), pair 13 at 3.5e-4 a position
  (recency: -sin(d theta) falls nearly linearly over 4,400 positions), pairs 29-63 by under 2.6e-8
  (token identity, exact over 4,096 positions, both halves of a pair).
- Layer 1, a previous-token head: attends to position m-1 by position alone (>= 30 logits over
  any other) and writes CUR there into PREV.
- Layer 2, an induction head: a key whose PREV equals this CUR scores LAMBDA, and every key loses
  STEP logits a position of distance, so the most recent match wins; with no match the position
  itself wins (NEXT = CUR).
- Head: logits = 10 (NEXT - CUR) + 6 succ(CUR), where succ is one cycle through the 61
  characters: the copied token, or with no match (or a copy of the token itself) its successor.

With --draft, its draft model: the same circuit in two layers (23 MB, MLPs of 64), sharing the
tokenizer, whose successor cycle is another one: it proposes what the copier will copy and guesses
wrong where the copier has nothing to copy, as a small draft of a served model knows its context
better than its language.

So greedy decoding continues with the token after the most recent earlier occurrence of the last
token, else that token's successor (`expected` below); the script checks transformers' logits
agree with that rule at every position of random sequences up to 4,000 tokens and exits 1 if not.
Writes <out-dir>/ (save_pretrained, tokenizer.json, copier.json: the rule's successor table).
"""

import json
import math
import os
import sys

import tokenizers
import torch
import transformers

HEAD_DIM = 128
PAIRS = HEAD_DIM // 2
HEADS = 8
KV_HEADS = 2
HIDDEN = 1024
INTERMEDIATE = 4096
LAYERS = 8  # two that copy, six of zeros: ~122M parameters, 487 MB in float32, past this machine's 300 MB L3
DRAFT = {"layers": 2, "intermediate": 64, "seed": 2}
BASE = 1e17
SPECIALS = ["<unk>", "<s>", "</s>"]
CHARS = ["\n"] + [chr(c) for c in range(32, 92)]  # space to "[": digits, capitals, punctuation
VOCAB = len(SPECIALS) + len(CHARS)
CUR, PREV, NEXT, CONST = 0, VOCAB, 2 * VOCAB, 3 * VOCAB
FAST = range(0, 6)
RECENCY = 13
IDENTITY = [(pair, half) for pair in range(29, PAIRS) for half in (0, 1)][:VOCAB]
MAX_POSITIONS = 4096
STEP = 1.5  # logits a match loses per position of distance
COPY, SUCCESSOR = 10.0, 6.0  # the head's weights on NEXT - CUR and on succ(CUR)
SEED = 1544

THETA = [BASE ** (-2 * i / HEAD_DIM) for i in range(PAIRS)]
SCALE = 1 / math.sqrt(HEAD_DIM)  # attention's own 1 / sqrt(head_dim)


def positional_margin(offset):
    """How far the fast pairs aimed at `offset` score it above any other distance under MAX_POSITIONS."""
    score = lambda d: sum(math.cos((d - offset) * THETA[i]) for i in FAST)  # noqa: E731
    return score(offset) - max(score(d) for d in range(MAX_POSITIONS) if d != offset)


def set_pair(q, k, pair, zq, zk, q_column, k_column, gain):
    """Rows of RoPE pair `pair` (its halves at pair and pair + PAIRS): q = zq times input q_column, k = zk times k_column, per unit of the normalized input."""
    q[pair, q_column] += zq.real / gain
    q[pair + PAIRS, q_column] += zq.imag / gain
    k[pair, k_column] += zk.real / gain
    k[pair + PAIRS, k_column] += zk.imag / gain


def successor_table(seed):
    g = torch.Generator().manual_seed(seed)
    order = (torch.randperm(VOCAB - len(SPECIALS), generator=g) + len(SPECIALS)).tolist()
    succ = {order[j]: order[(j + 1) % len(order)] for j in range(len(order))}
    for t in range(len(SPECIALS)):
        succ[t] = order[0]
    return [succ[t] for t in range(VOCAB)]


def weights(model, succ):
    sd = {name: torch.zeros_like(value) for name, value in model.state_dict().items()}
    for name in sd:
        if name.endswith("norm.weight"):
            sd[name] = torch.ones_like(sd[name])
    for t in range(VOCAB):
        sd["model.embed_tokens.weight"][t, CUR + t] = 1
        sd["model.embed_tokens.weight"][t, CONST] = 1
    # RMSNorm's gain on each layer's input: 2, 3 and 4 unit entries in HIDDEN.
    gain1, gain2, gain3 = (math.sqrt(HIDDEN / n) for n in (2, 3, 4))

    q, k, v, o = (sd[f"model.layers.0.self_attn.{p}_proj.weight"] for p in "qkvo")
    w = 30 / (positional_margin(1) * SCALE)
    for i in FAST:
        set_pair(q, k, i, w * complex(math.cos(THETA[i]), -math.sin(THETA[i])), complex(1, 0), CONST, CONST, gain1)
    for t in range(VOCAB):
        v[t, CUR + t] = 1 / gain1
        o[PREV + t, t] = 1

    q, k, v, o = (sd[f"model.layers.1.self_attn.{p}_proj.weight"] for p in "qkvo")
    mu = STEP / (THETA[RECENCY] * SCALE)
    lam = mu + 40 / SCALE  # a match beats the position itself by >= 40 logits at any distance
    set_pair(q, k, RECENCY, complex(0, mu), complex(1, 0), CONST, CONST, gain2)
    for t, (pair, half) in enumerate(IDENTITY):
        q[pair + half * PAIRS, CUR + t] += lam / gain2
        k[pair + half * PAIRS, PREV + t] += 1 / gain2
    for t in range(VOCAB):
        v[t, CUR + t] = 1 / gain2
        o[NEXT + t, t] = 1

    head = sd["lm_head.weight"]
    for t in range(VOCAB):
        head[t, NEXT + t] += COPY / gain3
        head[t, CUR + t] -= COPY / gain3
        head[succ[t], CUR + t] += SUCCESSOR / gain3
    return sd


def expected(tokens, succ):
    """The rule: the token after the most recent earlier occurrence of the last token, else (or when that is the token itself) its successor."""
    m = len(tokens) - 1
    for n in range(m, 0, -1):
        if tokens[n - 1] == tokens[m]:
            return succ[tokens[m]] if tokens[n] == tokens[m] else tokens[n]
    return succ[tokens[m]]


def agreement(model, succ):
    g = torch.Generator().manual_seed(7)
    agree = total = 0
    with torch.no_grad():
        for length in (16, 300, 1500, 4000):
            tokens = torch.randint(0, VOCAB, (length,), generator=g).tolist()
            predicted = model(torch.tensor([tokens])).logits[0].argmax(-1).tolist()
            agree += sum(predicted[m] == expected(tokens[: m + 1], succ) for m in range(length))
            total += length
    return agree, total


def write_tokenizer(out):
    vocab = {token: i for i, token in enumerate(SPECIALS + CHARS)}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tokenizer.add_special_tokens(SPECIALS)
    tokenizer.decoder = tokenizers.decoders.Fuse()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>").save_pretrained(out)


def main(out, draft):
    torch.manual_seed(SEED)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=DRAFT["intermediate"] if draft else INTERMEDIATE,
        num_hidden_layers=DRAFT["layers"] if draft else LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM, max_position_embeddings=MAX_POSITIONS, rms_norm_eps=1e-5,
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, rope_parameters={"rope_type": "default", "rope_theta": BASE},
    )
    model = transformers.LlamaForCausalLM(config).eval()
    succ = successor_table(DRAFT["seed"] if draft else SEED)
    model.load_state_dict(weights(model, succ))
    agree, total = agreement(model, succ)
    print(f"transformers {transformers.__version__}: greedy agrees with the rule at {agree} of {total} positions")
    if agree != total:
        sys.exit(1)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out)
    write_tokenizer(out)
    with open(os.path.join(out, "copier.json"), "w") as f:
        json.dump({"successor": succ, "agreement": [agree, total], "transformers": transformers.__version__}, f)


if __name__ == "__main__":
    main(sys.argv[1], "--draft" in sys.argv[2:])
