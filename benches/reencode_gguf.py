"""Writes a copy of a GGUF model whose tensors of some quantization types are re-encoded in another,
so the parallel-decoding bench can tell whether the weights' kernels cap the gain of batching.

On x86, llama.cpp repacks Q4_0 and Q4_K weights for a GEMM over several sequences at once, but
not Q6_K, which Qwen2.5-Coder-1.5B's Q4_K_M file uses for its output matrix, half its
`ffn_down` and half its `attn_v` (24% of its weights). Re-encoding those (or every tensor) shows
what the batch gains when every matrix product takes a repacked or tiled path.

Each chosen tensor is dequantized to f32 and quantized again, so a lower-precision target loses
precision: the copies are for measuring speed, not for authoring. Every other tensor and every
metadata key is copied as it is.

Usage:
    python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf==0.19.0
    /tmp/gguf-venv/bin/python benches/reencode_gguf.py SOURCE.gguf OUT.gguf TARGET FROM [FROM ...]

    # Q6_K tensors as Q8_0; then every Q4_K and Q6_K tensor as Q4_0:
    .../python benches/reencode_gguf.py models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        /tmp/q15-q6k-as-q8_0.gguf Q8_0 Q6_K
    .../python benches/reencode_gguf.py models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        /tmp/q15-all-q4_0.gguf Q4_0 Q4_K Q6_K
    SASEVAL_TEST_MODEL=/tmp/q15-all-q4_0.gguf cargo bench --bench local_speed -- --parallel 4
"""

import argparse

import gguf
from gguf import quants


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("out")
    parser.add_argument("target", help="quantization type to write, e.g. Q8_0")
    parser.add_argument("sources", nargs="+", metavar="FROM", help="types to re-encode, e.g. Q6_K")
    args = parser.parse_args()
    target = gguf.GGMLQuantizationType[args.target]
    chosen = {gguf.GGMLQuantizationType[name] for name in args.sources}

    reader = gguf.GGUFReader(args.source)
    architecture = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(args.out, arch=architecture, endianess=reader.endianess)
    for field in reader.fields.values():
        # The writer writes the architecture and the GGUF header fields itself.
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), value_type, sub_type=sub_type)

    tensors = []
    for tensor in reader.tensors:
        if tensor.tensor_type in chosen:
            values = quants.dequantize(tensor.data, tensor.tensor_type)
            tensors.append((tensor.name, quants.quantize(values, target), target))
        else:
            tensors.append((tensor.name, tensor.data, tensor.tensor_type))
    for name, data, kind in tensors:
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in tensors:
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()


if __name__ == "__main__":
    main()
