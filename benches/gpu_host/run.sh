#!/usr/bin/env bash
# Call 2 on the GPU host (README.md), right after stash.sh: unpack, install the GPU wheel,
# parity on CUDA, the GPU benches, serving; results in $OUT.
set -u
T0=$(date +%s); END=$((T0 + ${BUDGET:-515}))
log() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $((END - $(date +%s))); }
[ -f /tmp/gpu-parts/blob.00 ] || { echo "NO STASH: the machine was not kept warm"; exit 3; }
D=/tmp/dev; mkdir -p $D
cat /tmp/gpu-parts/blob.00 .dev/b/blob.01 | LD_LIBRARY_PATH=.dev/zbin .dev/zbin/zstd -d -q --long=27 | tar -x -C $D || { echo unpack failed; exit 4; }
log unpacked
SP=$(python3 -c "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))")
export LD_LIBRARY_PATH=$(find "$SP/nvidia" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd:)
export PYTHONPATH=$D/site:$PWD HF_HUB_OFFLINE=1 RUST_BERTSCORE_WMT_DIR=$D/wmt PYTHONUNBUFFERED=1
python3 -m pip uninstall -y onnxruntime > $OUT/install.log 2>&1
python3 packaging/gpu_wheel.py target/wheels/rust_bertscore-*.whl --out $D/gpuwheel >> $OUT/install.log 2>&1
python3 -m pip install -q --no-index --no-deps --target $D/site $D/gpuwheel/*.whl >> $OUT/install.log 2>&1
ls $D/gpuwheel >> $OUT/install.log
mkdir -p tests/data/reference && cp -r $D/refs/* tests/data/reference/
log installed
python3 benches/gpu_host/prep_shapes.py $D/minilm > $OUT/prep.log 2>&1 &
PREP=$!
python3 benches/gpu_host/check_install.py tests/data/reference/tiny/bert > $OUT/check_install.json 2>&1; cat $OUT/check_install.json | head -40
log checked
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_gpu_path.py tests/test_overlap.py -W ignore::DeprecationWarning -W ignore::FutureWarning -W ignore::PendingDeprecationWarning -rfEs > $OUT/pytest_gpu.log 2>&1; echo "pytest rc $?" >> $OUT/pytest_gpu.log
tail -25 $OUT/pytest_gpu.log
log parity
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
while [ ! -f /tmp/shapes/minilm.ready ] && kill -0 $PREP 2>/dev/null; do sleep 2; done; cat $OUT/prep.log
log shapes ready
B="python3 -m benches.gpu --bert-score-python python3 --repeats 2 --minilm-pairs 0 --shape-dir /tmp/shapes --minilm-dir $D/minilm --overlap on,off"
timeout $(( $(left) - 200 )) $B --shapes roberta-large --json $OUT/gpu-roberta-large.json > $OUT/bench_roberta.log 2>&1; echo "rc $?" >> $OUT/bench_roberta.log
cat $OUT/bench_roberta.log | tail -14
log roberta done
timeout $(( $(left) - 150 )) $B --shapes minilm --json $OUT/gpu-minilm.json > $OUT/bench_minilm.log 2>&1; echo "rc $?" >> $OUT/bench_minilm.log
tail -10 $OUT/bench_minilm.log
log minilm done
timeout 60 python3 benches/gpu_host/profile.py $OUT/profile.json > $OUT/profile.log 2>&1; tail -5 $OUT/profile.log
log profile done
timeout $(( $(left) - 70 )) python3 -m benches.serve --device cuda --model /tmp/shapes/minilm-random --bert-score-python python3 --single 100 --requests 192 --json $OUT/serve-cuda.json > $OUT/serve.log 2>&1; echo "rc $?" >> $OUT/serve.log
tail -16 $OUT/serve.log
log serve done
if [ -f /tmp/shapes/deberta-xlarge.ready ] && [ $(left) -gt 50 ]; then
  timeout $(( $(left) - 5 )) python3 -m benches.gpu --bert-score-python python3 --repeats 1 --minilm-pairs 0 --shape-dir /tmp/shapes --shapes deberta-xlarge --precisions fp32,fp16 --json $OUT/gpu-deberta-xlarge.json > $OUT/bench_deberta.log 2>&1; echo "rc $?" >> $OUT/bench_deberta.log
  tail -8 $OUT/bench_deberta.log
fi
cat $OUT/prep.log
log end
