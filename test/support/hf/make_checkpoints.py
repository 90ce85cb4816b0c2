"""Tiny random Hugging Face checkpoints, each built by its family's own transformers class, and
transformers' own greedy output on them: the reference `conveyor convert` is held to
(test/integration/convert-hf-parity.test.ts).

    python make_checkpoints.py <out-dir> [case ...]

For each case (all when none is named) it writes
    <out-dir>/<case>/v5/   save_pretrained's checkpoint (config.json as transformers 5 writes it:
                           rope_parameters), tokenizer.json, tokenizer_config.json
    <out-dir>/<case>/v4/   the same weights and tokenizer, config.json rewritten into the
                           transformers 4.x layout (top-level rope_theta, rope_scaling, ...)
and <out-dir>/reference.json: per case, the prompts (token ids), transformers' 24 greedy new
tokens for each and the first generated position's log-softmax top 5.

The weights are random but not flat: linear weights have std 0.2 so greedy output depends on the
context, and norm weights and every bias are randomised so a tensor the converter drops changes
the output. EOS is None everywhere, so generation always runs its 24 tokens.
"""

import json
import math
import os
import shutil
import sys
import time

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

VOCAB = 512
PROMPT_LENGTHS = [1, 2, 7, 40, 130, 300]
MAX_NEW_TOKENS = 24
TOP = 5
SEED = 1234
WEIGHT_STD = 0.2

# Shared by every config: no special ids (generation never stops early), float32.
COMMON = dict(vocab_size=VOCAB, bos_token_id=None, eos_token_id=None, pad_token_id=None, max_position_embeddings=512)


def llama(**extra):
    return transformers.LlamaConfig(**COMMON, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, **extra)


def llama3_scaled():
    # Llama 3.1's rope_type llama3 with a short original context, so every band of the rule (kept,
    # blended, slowed by `factor`) falls inside head_dim 16's frequencies.
    rope = dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=64)
    return llama(rope_parameters=rope)


def mistral():
    return transformers.MistralConfig(**COMMON, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, sliding_window=32, rope_parameters=dict(rope_type="default", rope_theta=10000.0))


def qwen2():
    return transformers.Qwen2Config(**COMMON, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, rope_parameters=dict(rope_type="default", rope_theta=1e6))


def qwen3():
    return transformers.Qwen3Config(**COMMON, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32, rope_parameters=dict(rope_type="default", rope_theta=1e6))


# Gemma3: layer i slides unless (i + 1) % pattern == 0, the rule 4.x derived layer_types from.
GEMMA3_PATTERN = 3
GEMMA3_LAYERS = 4
GEMMA3_EMBEDDING_STD = 0.05
GEMMA3_FINAL_NORM = 6.0


def gemma3():
    layer_types = ["sliding_attention" if (i + 1) % GEMMA3_PATTERN else "full_attention" for i in range(GEMMA3_LAYERS)]
    rope = {
        "sliding_attention": dict(rope_type="default", rope_theta=10000.0),
        "full_attention": dict(rope_type="linear", factor=8.0, rope_theta=1e6),
    }
    return transformers.Gemma3TextConfig(
        **COMMON, hidden_size=64, intermediate_size=128, num_hidden_layers=GEMMA3_LAYERS, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        query_pre_attn_scalar=24, sliding_window=16, layer_types=layer_types, rope_parameters=rope, tie_word_embeddings=True,
    )


def phi3(longrope=False):
    # head_dim 32, rotary dims 24 (partial_rotary_factor 0.75): 12 frequencies.
    extra = dict(max_position_embeddings=512, original_max_position_embeddings=512, rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.75))
    if longrope:
        short = [1.0 + 0.05 * i for i in range(12)]
        long = [1.0 + 0.6 * i for i in range(12)]
        rope = dict(rope_type="longrope", rope_theta=10000.0, partial_rotary_factor=0.75, short_factor=short, long_factor=long, original_max_position_embeddings=64)
        extra = dict(max_position_embeddings=256, original_max_position_embeddings=64, rope_parameters=rope)
    common = {**COMMON, **extra}
    return transformers.Phi3Config(**common, hidden_size=128, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)


def smollm3():
    return transformers.SmolLM3Config(
        **COMMON, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        no_rope_layers=[1, 1, 0, 1], rope_parameters=dict(rope_type="default", rope_theta=2e6), tie_word_embeddings=True,
    )


def granite():
    return transformers.GraniteConfig(
        **COMMON, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        embedding_multiplier=4.0, residual_multiplier=0.5, attention_multiplier=0.1, logits_scaling=2.5, rope_parameters=dict(rope_type="default", rope_theta=10000.0),
    )


def olmo2():
    return transformers.Olmo2Config(**COMMON, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, rope_parameters=dict(rope_type="default", rope_theta=500000.0))


CASES = {
    "llama": (transformers.LlamaForCausalLM, lambda: llama(rope_parameters=dict(rope_type="default", rope_theta=10000.0))),
    "llama-tied": (transformers.LlamaForCausalLM, lambda: llama(rope_parameters=dict(rope_type="default", rope_theta=10000.0), tie_word_embeddings=True)),
    "llama3-scaled": (transformers.LlamaForCausalLM, llama3_scaled),
    "mistral": (transformers.MistralForCausalLM, mistral),
    "qwen2": (transformers.Qwen2ForCausalLM, qwen2),
    "qwen3": (transformers.Qwen3ForCausalLM, qwen3),
    "gemma3": (transformers.Gemma3ForCausalLM, gemma3),
    "phi3": (transformers.Phi3ForCausalLM, phi3),
    "phi3-longrope": (transformers.Phi3ForCausalLM, lambda: phi3(longrope=True)),
    "smollm3": (transformers.SmolLM3ForCausalLM, smollm3),
    "granite": (transformers.GraniteForCausalLM, granite),
    "olmo2": (transformers.Olmo2ForCausalLM, olmo2),
}


def randomise(model, generator):
    """Linear and embedding weights N(0, 0.2); norm weights around their identity; biases N(0, 0.2)."""
    gemma = isinstance(model, transformers.Gemma3ForCausalLM)
    # Gemma's RMSNorm scales by (1 + weight): its identity is 0, every other family's is 1.
    norm_identity = 0.0 if gemma else 1.0
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator, dtype=torch.float32)
            if name.endswith(".bias"):
                param.copy_(noise * WEIGHT_STD)
            elif gemma and name == "model.norm.weight":
                # ... and a small tied embedding makes flat logits unless the final norm scales them up.
                param.copy_(GEMMA3_FINAL_NORM - 1 + noise * 0.25)
            elif param.ndim == 1:
                param.copy_(norm_identity + noise * 0.25)
            elif gemma and name.endswith("embed_tokens.weight"):
                # Gemma multiplies the embedding by sqrt(hidden) and ties the head to it: at 0.2 the
                # token's own embedding outweighs the layers and greedy output repeats the last token.
                param.copy_(noise * GEMMA3_EMBEDDING_STD)
            else:
                param.copy_(noise * WEIGHT_STD)


def write_tokenizer(directory, size=VOCAB):
    """A WordPiece tokenizer over t0..t511 (t0..t<size - 1>; whole words only), whitespace split: ids are words."""
    vocab = {f"t{i}": i for i in range(size)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="t0", max_input_chars_per_word=100))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.save(os.path.join(directory, "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "t0", "model_max_length": 512, "clean_up_tokenization_spaces": False}
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)


def v4_config(config):
    """transformers 5's config.json → the layout transformers 4.x wrote for the same model."""
    old = {k: v for k, v in config.items() if k not in ("rope_parameters", "dtype")}
    old["torch_dtype"] = config.get("dtype", "float32")
    old["transformers_version"] = "4.51.3"
    rope = config.get("rope_parameters") or {}
    if config["model_type"] == "gemma3_text":
        full, local = dict(rope["full_attention"]), rope["sliding_attention"]
        old["rope_theta"] = full.pop("rope_theta")
        old["rope_local_base_freq"] = local["rope_theta"]
        old["rope_scaling"] = None if full.get("rope_type") == "default" else full  # {"factor": 8.0, "rope_type": "linear"}, as Gemma 3 4B's
        # The first Gemma3 release wrote the pattern, not the list of layer types.
        old["sliding_window_pattern"] = GEMMA3_PATTERN
        old.pop("_sliding_window_pattern", None)
        old.pop("layer_types", None)
        return old
    rope = dict(rope)
    old["rope_theta"] = rope.pop("rope_theta")
    if "partial_rotary_factor" in rope:
        factor = rope.pop("partial_rotary_factor")
        if factor != 1.0 or config["model_type"] == "phi3":
            old["partial_rotary_factor"] = factor
    kind = rope.get("rope_type", "default")
    if kind == "default":
        old["rope_scaling"] = None
    elif config["model_type"] == "phi3":
        # Phi-3's rope_scaling was exactly {type, short_factor, long_factor} (4.x validated that),
        # with original_max_position_embeddings top-level.
        old["rope_scaling"] = {"type": kind, "short_factor": rope["short_factor"], "long_factor": rope["long_factor"]}
    else:
        old["rope_scaling"] = rope  # e.g. Llama 3.1's {"rope_type": "llama3", "factor": 8.0, ...}
    # 4.x LLaMA/Mistral/Qwen never wrote layer_types (Qwen2/3 only from 4.53; their releases did not).
    if config["model_type"] in ("llama", "mistral", "qwen2", "qwen3", "granite", "olmo2"):
        old.pop("layer_types", None)
    return old


def check_same_meaning(v5, v4):
    """transformers must read the 4.x layout as the same RoPE and layer types as its own."""
    def meaning(directory):
        config = transformers.AutoConfig.from_pretrained(directory)
        strip = lambda d: {k: v for k, v in d.items() if k != "type"} if isinstance(d, dict) else d
        rope = config.rope_parameters
        rope = {k: strip(v) for k, v in rope.items()} if all(isinstance(v, dict) for v in rope.values()) else strip(rope)
        return rope, getattr(config, "layer_types", None), getattr(config, "no_rope_layers", None)
    if meaning(v5) != meaning(v4):
        raise SystemExit(f"{v4}: transformers reads the 4.x config differently: {meaning(v4)} vs {meaning(v5)}")


def reference(model, prompts):
    runs = []
    for prompt in prompts:
        ids = torch.tensor([prompt], dtype=torch.long)
        out = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=MAX_NEW_TOKENS, min_new_tokens=MAX_NEW_TOKENS, do_sample=False,
            eos_token_id=None, pad_token_id=0, output_logits=True, return_dict_in_generate=True,
        )
        tokens = out.sequences[0, len(prompt):].tolist()
        logprobs = torch.log_softmax(out.logits[0][0].double(), dim=-1)
        top = torch.topk(logprobs, TOP)
        # The narrowest lead greedy had over the runner-up at any step: a mismatch there may be a near tie.
        margins = [float(step[0].topk(2).values[0] - step[0].topk(2).values[1]) for step in out.logits]
        runs.append({"prompt": prompt, "tokens": tokens, "top_ids": top.indices.tolist(), "top_logprobs": top.values.tolist(), "min_margin": min(margins)})
    return runs


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or list(CASES)
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    prompt_rng = torch.Generator().manual_seed(SEED)
    all_prompts = [torch.randint(0, VOCAB, (n,), generator=prompt_rng).tolist() for n in PROMPT_LENGTHS]
    result = {"transformers": transformers.__version__, "torch": torch.__version__, "max_new_tokens": MAX_NEW_TOKENS, "top": TOP, "cases": {}}
    for index, name in enumerate(names):
        started = time.time()
        cls, make_config = CASES[name]
        config = make_config()
        torch.manual_seed(SEED + index)
        model = cls(config).eval()
        randomise(model, torch.Generator().manual_seed(SEED + 100 + index))
        model.generation_config.eos_token_id = None
        model.generation_config.bos_token_id = None
        model.generation_config.pad_token_id = None
        v5, v4 = os.path.join(out, name, "v5"), os.path.join(out, name, "v4")
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
        model.save_pretrained(v5, safe_serialization=True)
        write_tokenizer(v5)
        os.makedirs(v4, exist_ok=True)
        for file in os.listdir(v5):
            if file != "config.json":
                os.link(os.path.join(v5, file), os.path.join(v4, file))
        with open(os.path.join(v5, "config.json")) as f:
            saved = json.load(f)
        with open(os.path.join(v4, "config.json"), "w") as f:
            json.dump(v4_config(saved), f, indent=2)
        check_same_meaning(v5, v4)
        # Prompts (and their 24 new tokens) that fit the model's context.
        prompts = [p for p in all_prompts if len(p) + MAX_NEW_TOKENS <= config.max_position_embeddings]
        with torch.no_grad():
            result["cases"][name] = {"architecture": cls.__name__, "runs": reference(model, prompts)}
        print(f"{name}: {cls.__name__}, {sum(p.numel() for p in model.parameters())} parameters, {len(prompts)} prompts, {time.time() - started:.1f} s", file=sys.stderr)
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
