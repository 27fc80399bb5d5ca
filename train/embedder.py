"""Fine-tune the packaged all-MiniLM-L6-v2 on mined (query, passage, hard negative) triples; write an fp16
overlay of the trained transformer layers (the word-embedding matrix stays frozen and is not shipped).

    # on the GPU machine (a fixed time budget; stops early, the learning rate decays to 0 by the budget's end)
    python train/embedder.py --data train-data/train.jsonl.xz --base train-data/base --out $OUT/v1 \
        --budget-s 150 --epochs 2 --lr 5e-5 --batch 128
    # a CPU smoke test on a tiny subset
    python train/embedder.py --data ... --base ... --out /tmp/t --limit 256 --batch 16 --budget-s 20 --device cpu

Data (train/pack.py writes it): one JSON object per line, {"q", "p", "n": index of the hard negative's line or
-1, "kind"}; each line's passage is unique, so a passage is identified by its line number.
--base: a folder with config.json, tokenizer.json and model.safetensors (fp16 or fp32) of the packaged model.
Loss: in-batch negatives + one bm25 hard negative per query (MultipleNegativesRankingLoss, scale 20), with a
column masked where it holds the query's own positive passage (a hard negative of another row can be it).
Output: OUT/overlay-K.safetensors (fp16 tensors, names as in the packaged model.safetensors, split to stay under
15 MiB a file), OUT/train.json (options, steps, loss curve, wall time).
"""
from __future__ import annotations

import argparse
import json
import lzma
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F


def load_rows(path: Path, kinds: set[str] | None, limit: int | None) -> list[dict]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt") as f:
        rows = [json.loads(line) for line in f]
    for i, r in enumerate(rows):
        r["id"] = i
    if kinds:
        rows = [r for r in rows if r["kind"] in kinds]
    if limit:
        rows = rows[:limit]
    return rows


def parse_layers(spec: str) -> list[int]:
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def build_model(base: Path, device: str):
    from safetensors.torch import load_file
    from transformers import BertConfig, BertModel

    cfg = BertConfig.from_pretrained(str(base))
    model = BertModel(cfg, add_pooling_layer=False)
    state = {k.removeprefix("bert."): v.float() for k, v in load_file(str(base / "model.safetensors")).items()
             if not k.startswith("pooler.")}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if "position_ids" not in k]
    if missing or [k for k in unexpected if "position_ids" not in k]:
        raise SystemExit(f"weights do not fit: missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model.to(device)


def embed(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return F.normalize(pooled.float(), dim=-1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--kinds", help="comma-separated pair kinds to train on (default: all)")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--warmup", type=float, default=0.05)
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--max-q", type=int, default=64)
    ap.add_argument("--max-p", type=int, default=256)
    ap.add_argument("--no-neg", action="store_true", help="in-batch negatives only")
    ap.add_argument("--train-layers", default="0-5")
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(args.base / "tokenizer.json"))
    tok.no_padding()
    kinds = set(args.kinds.split(",")) if args.kinds else None
    all_rows = load_rows(args.data, None, None)
    rows = load_rows(args.data, kinds, args.limit) if (kinds or args.limit) else all_rows
    passages = {r["id"]: r["p"] for r in all_rows}

    def encode(texts: list[str], n: int) -> list[list[int]]:
        tok.enable_truncation(max_length=n)
        return [e.ids for e in tok.encode_batch(texts)]

    q_ids = encode([r["q"] for r in rows], args.max_q)
    need = sorted({r["id"] for r in rows} | {r["n"] for r in rows if r.get("n", -1) >= 0})
    p_tok = dict(zip(need, encode([passages[i] for i in need], args.max_p)))
    print(f"{len(rows)} pairs, {len(need)} passages tokenized ({time.time() - t0:.0f} s)", file=sys.stderr)

    model = build_model(args.base, args.device)
    layers = parse_layers(args.train_layers)
    for name, p in model.named_parameters():
        p.requires_grad = any(name.startswith(f"encoder.layer.{i}.") for i in layers)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    steps_per_epoch = len(rows) // args.batch
    total = max(1, int(steps_per_epoch * args.epochs))
    dev = args.device
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if dev.startswith("cuda") else torch.autocast("cpu",
                                                                                                     enabled=False)

    def pad(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        n = max(len(s) for s in seqs)
        ids = torch.zeros(len(seqs), n, dtype=torch.long)
        mask = torch.zeros(len(seqs), n, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, :len(s)] = torch.tensor(s)
            mask[i, :len(s)] = 1
        return ids.to(dev, non_blocking=True), mask.to(dev, non_blocking=True)

    model.train()
    curve, step, stop, t_train = [], 0, False, time.time()
    order = list(range(len(rows)))
    while not stop:
        rng.shuffle(order)
        for b in range(0, steps_per_epoch * args.batch, args.batch):
            elapsed = time.time() - t0
            progress = max(step / total, elapsed / args.budget_s)
            if progress >= 1.0:
                stop = True
                break
            lr = args.lr * min(1.0, progress / args.warmup) * (1.0 - progress) if args.warmup else \
                args.lr * (1.0 - progress)
            for g in opt.param_groups:
                g["lr"] = lr
            batch = [rows[i] for i in order[b:b + args.batch]]
            pos_ids = [r["id"] for r in batch]
            cols = list(pos_ids)
            if not args.no_neg:
                cols += [r["n"] for r in batch if r.get("n", -1) >= 0]
            q, qm = pad([q_ids[i] for i in order[b:b + args.batch]])
            p, pm = pad([p_tok[c] for c in cols])
            with amp:
                eq = embed(model, q, qm)
                ep = embed(model, p, pm)
            logits = args.scale * eq @ ep.T
            col = torch.tensor(cols, device=dev)
            own = torch.tensor(pos_ids, device=dev)
            same = col.unsqueeze(0) == own.unsqueeze(1)  # columns that hold this row's own passage
            same[torch.arange(len(batch)), torch.arange(len(batch))] = False
            logits = logits.masked_fill(same, -1e4)
            loss = F.cross_entropy(logits, torch.arange(len(batch), device=dev))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            step += 1
            if step % 25 == 0 or step == 1:
                curve.append((step, round(loss.item(), 4), round(time.time() - t0, 1)))
                print(f"step {step}/{total} loss {loss.item():.4f} lr {lr:.2e} {time.time() - t0:.0f} s",
                      file=sys.stderr)
        else:
            if step >= total:
                stop = True

    # the overlay: every trained tensor in fp16, named as in the packaged model.safetensors
    from safetensors.torch import save_file
    args.out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu", torch.float16).contiguous() for k, v in model.state_dict().items()
             if any(k.startswith(f"encoder.layer.{i}.") for i in layers)}
    parts, cur, size = [], {}, 0
    for k in sorted(state):
        nbytes = state[k].numel() * 2
        if cur and size + nbytes > 15 * 2**20:
            parts.append(cur)
            cur, size = {}, 0
        cur[k] = state[k]
        size += nbytes
    parts.append(cur)
    for i, part in enumerate(parts):
        save_file(part, str(args.out / f"overlay-{i}.safetensors"), metadata={"base": "all-MiniLM-L6-v2"})
    info = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    info.update(steps=step, planned_steps=total, pairs=len(rows), seconds=round(time.time() - t0, 1),
                train_seconds=round(time.time() - t_train, 1), epochs_done=round(step / max(1, steps_per_epoch), 3),
                curve=curve, device_name=torch.cuda.get_device_name() if dev.startswith("cuda") else "cpu")
    (args.out / "train.json").write_text(json.dumps(info, indent=1))
    print(json.dumps({k: info[k] for k in ("steps", "planned_steps", "epochs_done", "seconds")}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
