#!/bin/sh
# The GPU step of the recipe (docs/embedder.md), as sent to the device machine: run from the checkout root
# with the packed folder (train/pack.py + train/embedder.py copied in) at $D; overlays land in $OUT/<variant>/.
# usage: OUT=/some/dir sh train/device_run.sh [D] [steps...]
#   run 1 (the first tune sweep): A B C
#   run 2 (interpolation sweep):  B2 embed1 E embed2 -- retrain B's recipe, train E (documentation pairs only),
#   run 3 (plain-words pairs, train/plain_words.py): P Q -- P: E's recipe with the plain pairs added, Q: plain pairs
#   alone; then, in a call that carries their overlays back as train-out/P and train-out/Q (the OUT of a call starts
#   empty), embed3: the chunks with each candidate and the shipped overlay (KM, brain/models/kernel-minilm), one
#   .npz per candidate (all in one file is over what a call brings back)
#   run 4 (commit messages, train/mine_commits.py): R S embed4 -- R: E's recipe with the commit and summary pairs
#   added, S: those pairs alone; embed4: the chunks with each candidate, the base and the shipped overlay, in the
#   same call (one .npz per candidate)
#   embed the evaluated chunks (train/fast_tune.py collect -> $D/chunks.json.xz) with the base model and with
#   base + alpha * (trained - base) for several alphas (train/embed_chunks.py), for train/fast_tune.py eval
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
    B2) $T --out $OUT/B2 --lr 5e-5 --epochs 2 --budget-s 100 ;;
    E) $T --out $OUT/E --lr 2e-5 --epochs 3 --budget-s 60 --kinds heading,question,ict,doc2code --train-layers 2-5 ;;
    embed1) python3 $D/embed_chunks.py --chunks $D/chunks.json.xz --base $D/base --out $OUT/vectors-1.npz \
          --cand base --cand B2@0.15=$OUT/B2 --cand B2@0.3=$OUT/B2 --cand B2@0.5=$OUT/B2 --cand B2@1=$OUT/B2 ;;
    embed2) python3 $D/embed_chunks.py --chunks $D/chunks.json.xz --base $D/base --out $OUT/vectors-2.npz \
          --cand E@0.3=$OUT/E --cand E@0.6=$OUT/E --cand E@1=$OUT/E ;;
    P) $T --out $OUT/P --lr 2e-5 --epochs 3 --budget-s 60 --kinds heading,question,ict,doc2code,plain --train-layers 2-5 ;;
    Q) $T --out $OUT/Q --lr 2e-5 --epochs 3 --budget-s 45 --kinds plain --train-layers 2-5 ;;
    embed3) for c in base KM@1=brain/models/kernel-minilm P@0.3=train-out/P P@0.6=train-out/P P@1=train-out/P \
                   Q@0.3=train-out/Q Q@0.6=train-out/Q; do
          python3 $D/embed_chunks.py --chunks $D/chunks.json.xz --base $D/base --cand $c \
            --out $OUT/v3-$(echo ${c%%=*} | tr '@' '_').npz
        done ;;
    R) $T --out $OUT/R --lr 2e-5 --epochs 3 --budget-s 90 --kinds heading,question,ict,doc2code,commit,summary \
          --train-layers 2-5 ;;
    S) $T --out $OUT/S --lr 2e-5 --epochs 3 --budget-s 60 --kinds commit,summary --train-layers 2-5 ;;
    embed4) for c in base KM@1=brain/models/kernel-minilm R@0.3=$OUT/R R@0.5=$OUT/R S@0.3=$OUT/S S@0.5=$OUT/S; do
          python3 $D/embed_chunks.py --chunks $D/chunks.json.xz --base $D/base --cand $c \
            --out $OUT/v4-$(echo ${c%%=*} | tr '@' '_').npz
        done ;;
    *) echo "unknown variant $v" ;;
  esac
done
for v in $V; do [ -f $OUT/$v/train.json ] && { echo "== $v"; cat $OUT/$v/train.json; rm $OUT/$v/train.json; }; done > $OUT/train-all.json
ls -la $OUT/*
