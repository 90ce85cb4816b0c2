"""Bench-size random checkpoints, one per converted family, each built by its family's own
transformers class: what `npm run bench -- families` converts and serves.

    python make_bench_checkpoints.py <out-dir> [family ...]

Shapes are the bench decoder's (models/qwen3/config.ts `bench`: hidden 512, 8 layers, 8 heads,
2 KV heads, head_dim 64, intermediate 1408) and vocabulary (151,936: ≈100M parameters tied, as the bench decoder), each in its family's
own form: Qwen2's qkv biases, Qwen3's q/k norms, Gemma 3's sandwich norms and 5 local (window
512) : 1 global layers, Phi-3's fused projections with partial rotary 0.75, SmolLM3's NoPE every
4th layer, Granite's multipliers, OLMo 2's post-norms and q/k norms. Weights are randomised as the
parity checkpoints' are (test/support/hf/make_checkpoints.py, whose helpers this reuses) and
saved in bf16, as the released checkpoints are. Writes <out-dir>/<family>/ (save_pretrained,
tokenizer.json over t0..t151935) and <out-dir>/manifest.json (parameters, seconds per family).
"""

import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "test", "support", "hf"))

import torch  # noqa: E402
import transformers  # noqa: E402

import make_checkpoints as parity  # noqa: E402

VOCAB = 151_936
SEED = 4321
SHAPE = dict(
    vocab_size=VOCAB, bos_token_id=None, eos_token_id=None, pad_token_id=None, max_position_embeddings=4096,
    hidden_size=512, intermediate_size=1408, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=2,
)
LAYERS = SHAPE["num_hidden_layers"]


def rope(theta, **extra):
    return dict(rope_type="default", rope_theta=theta, **extra)


def gemma3():
    # Gemma 3's pattern: every 6th layer global, the rest sliding (window 512 here).
    layer_types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(LAYERS)]
    return transformers.Gemma3TextConfig(
        **SHAPE, head_dim=64, query_pre_attn_scalar=64, sliding_window=512, layer_types=layer_types,
        rope_parameters={"sliding_attention": rope(10000.0), "full_attention": rope(1e6)}, tie_word_embeddings=True,
    )


FAMILIES = {
    "llama": (transformers.LlamaForCausalLM, lambda: transformers.LlamaConfig(**SHAPE, rope_parameters=rope(500000.0))),
    "mistral": (transformers.MistralForCausalLM, lambda: transformers.MistralConfig(**SHAPE, sliding_window=4096, rope_parameters=rope(1e6))),
    "qwen2": (transformers.Qwen2ForCausalLM, lambda: transformers.Qwen2Config(**SHAPE, rope_parameters=rope(1e6), tie_word_embeddings=True)),
    "qwen3": (transformers.Qwen3ForCausalLM, lambda: transformers.Qwen3Config(**SHAPE, head_dim=64, rope_parameters=rope(1e6), tie_word_embeddings=True)),
    "gemma3": (transformers.Gemma3ForCausalLM, gemma3),
    "phi3": (transformers.Phi3ForCausalLM, lambda: transformers.Phi3Config(**SHAPE, original_max_position_embeddings=4096, rope_parameters=rope(10000.0, partial_rotary_factor=0.75))),
    "smollm3": (
        transformers.SmolLM3ForCausalLM,
        lambda: transformers.SmolLM3Config(**SHAPE, no_rope_layers=[0 if (i + 1) % 4 == 0 else 1 for i in range(LAYERS)], rope_parameters=rope(2e6), tie_word_embeddings=True),
    ),
    "granite": (
        transformers.GraniteForCausalLM,
        lambda: transformers.GraniteConfig(
            **SHAPE, embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.015625, logits_scaling=8.0, rope_parameters=rope(10000.0), tie_word_embeddings=True,
        ),
    ),
    "olmo2": (transformers.Olmo2ForCausalLM, lambda: transformers.Olmo2Config(**SHAPE, rope_parameters=rope(500000.0))),
}


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or list(FAMILIES)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    transformers.logging.set_verbosity_error()
    manifest_path = os.path.join(out, "manifest.json")
    manifest = {"transformers": transformers.__version__, "torch": torch.__version__, "dtype": "bfloat16", "families": {}}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest["families"] = json.load(f).get("families", {})
    for index, name in enumerate(names):
        started = time.time()
        cls, make_config = FAMILIES[name]
        torch.manual_seed(SEED + index)
        model = cls(make_config()).eval()
        parity.randomise(model, torch.Generator().manual_seed(SEED + 100 + index))
        model.generation_config.eos_token_id = None
        model.generation_config.bos_token_id = None
        model.generation_config.pad_token_id = None
        model = model.to(torch.bfloat16)
        directory = os.path.join(out, name)
        shutil.rmtree(directory, ignore_errors=True)
        model.save_pretrained(directory, safe_serialization=True)
        parity.write_tokenizer(directory, VOCAB)
        parameters = sum(p.numel() for p in model.parameters())
        seconds = time.time() - started
        manifest["families"][name] = {"architecture": cls.__name__, "parameters": parameters, "seconds": round(seconds, 1)}
        print(f"{name}: {cls.__name__}, {parameters} parameters, {seconds:.1f} s", file=sys.stderr)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2)


if __name__ == "__main__":
    main()
