"""The CPU benchmark's peer model for llama.cpp: a Llama of the FLOPs per token of
`bench/configs-bench-cpu.json` (issue 12: 384 dims, 8 heads, 2 KV heads of 48, ffn 1024,
24 layers for Dory's 6 layers × 4 passes, vocab 8192), random weights, written as GGUF in
one weight format. Speed does not depend on the values; the file has no tokenizer
(`no_vocab`), as llama-bench feeds token ids.

Usage: python bench/llama_peer.py FORMAT OUT.gguf   (FORMAT: f32 f16 bf16 q8_0)
Needs numpy and llama.cpp's own gguf-py (bench/llama_peer.sh puts it on PYTHONPATH).
"""

import sys

import numpy as np
import gguf

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS, VOCAB = 384, 8, 2, 48, 1024, 24, 8192
FORMATS = {
    "f32": gguf.GGMLQuantizationType.F32,
    "f16": gguf.GGMLQuantizationType.F16,
    "bf16": gguf.GGMLQuantizationType.BF16,
    "q8_0": gguf.GGMLQuantizationType.Q8_0,
}


def matrices():
    """(name, [out, in]) of every projection, embeddings and head included."""
    yield "token_embd.weight", (VOCAB, HIDDEN)
    yield "output.weight", (VOCAB, HIDDEN)
    for i in range(LAYERS):
        yield f"blk.{i}.attn_q.weight", (HEADS * HEAD_DIM, HIDDEN)
        yield f"blk.{i}.attn_k.weight", (KV_HEADS * HEAD_DIM, HIDDEN)
        yield f"blk.{i}.attn_v.weight", (KV_HEADS * HEAD_DIM, HIDDEN)
        yield f"blk.{i}.attn_output.weight", (HIDDEN, HEADS * HEAD_DIM)
        yield f"blk.{i}.ffn_gate.weight", (FFN, HIDDEN)
        yield f"blk.{i}.ffn_up.weight", (FFN, HIDDEN)
        yield f"blk.{i}.ffn_down.weight", (HIDDEN, FFN)


def main(fmt, path):
    if fmt not in FORMATS:
        sys.exit(f"llama_peer.py: format {fmt!r} is not one of {', '.join(FORMATS)}")
    kind = FORMATS[fmt]
    rng = np.random.default_rng(1)
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(4096)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_tokenizer_model("no_vocab")
    w.add_file_type({"f32": 0, "f16": 1, "bf16": 32, "q8_0": 7}[fmt])
    for name, shape in matrices():
        x = rng.normal(0.0, 0.02, shape).astype(np.float32)
        if kind == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, x)
        elif kind == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name, x.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(x, kind), raw_dtype=kind)
    w.add_tensor("output_norm.weight", np.ones(HIDDEN, np.float32))
    for i in range(LAYERS):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(HIDDEN, np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(HIDDEN, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
