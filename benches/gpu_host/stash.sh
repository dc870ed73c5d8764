#!/usr/bin/env bash
# Call 1 on the GPU host: keep part a where call 2 (the same warm machine) finds it.
set -u
mkdir -p /tmp/gpu-parts && cp .dev/a/blob.00 /tmp/gpu-parts/ && ls -la /tmp/gpu-parts
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-2000 > "$OUT/lscpu.txt"
python3 -c "import sys; print(sys.version)"
