#!/bin/sh
# The GPU step of the recipe (docs/embedder.md), as sent to the device machine: run from the checkout root
# with the packed folder (train/pack.py + train/embedder.py copied in) at $D; overlays land in $OUT/<variant>/.
# usage: OUT=/some/dir sh train/device_run.sh [D] [variants...]   variants: A B C (the tune sweep), F (final)
set -u
D=${1:-train-data}; shift 2>/dev/null || true
V=${*:-A B C}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
T="python3 $D/embedder.py --data $D/train.jsonl.xz --base $D/base --batch 128"
for v in $V; do
  echo "=== variant $v"
  case $v in
    A) $T --out $OUT/A --lr 2e-5 --epochs 1 --budget-s 70 ;;
    B) $T --out $OUT/B --lr 5e-5 --epochs 2 --budget-s 100 ;;
    C) $T --out $OUT/C --lr 5e-5 --epochs 1 --budget-s 70 --kinds comment,doc2code,heading,question,ict \
          --train-layers 2-5 ;;
    *) echo "unknown variant $v" ;;
  esac
done
for v in $V; do [ -f $OUT/$v/train.json ] && { echo "== $v"; cat $OUT/$v/train.json; rm $OUT/$v/train.json; }; done > $OUT/train-all.json
ls -la $OUT/*
