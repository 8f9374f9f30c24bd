#!/usr/bin/python3
"""A small PyTorch DDP training program run as a Tessera TrainingJob.

It trains a tiny causal transformer language model (character level, 2 layers, d=64) on a
corpus it generates from a seeded grammar, with DistributedDataParallel over gloo (CPU). It
does what a Megatron-LM, DeepSpeed or FSDP job does under a scheduler:

- reads the rendezvous from the environment Tessera sets (MASTER_ADDR, MASTER_PORT, RANK,
  WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) and joins the gang with init_process_group("gloo");
- checkpoints every --checkpoint-every steps, and at least every
  $TESSERA_CHECKPOINT_INTERVAL_SECONDS (the spec's checkpoint.intervalSeconds) of training, to
  $TESSERA_CHECKPOINT_DIR (a directory every node sees): rank 0 writes checkpoint.pt atomically
  (a temporary file, fsync, rename) with the step, the model, the optimizer and the RNG states;
- on start, every rank loads the checkpoint if there is one and continues after its step, also
  at another WORLD_SIZE than the one that wrote it (an elastic job resized by Tessera, as
  torchrun's elastic agent restarts every worker on a membership change): the model and the
  optimizer state do not depend on the number of ranks, and the batch of (step, rank) does not
  either, so the data stream goes on from the checkpoint's step with as many batches per step as
  there are ranks;
- on SIGTERM (preemption, cancellation, a gang restart) finishes the step it is in, agrees with
  the other ranks to stop after that same step, saves a checkpoint and exits 0 (well within the
  grace period: one step plus one save).

Lines the tests (and people) read: "step S loss X", "resumed from step S (saved by W ranks)",
"checkpoint saved at step S (reason)", "training finished at step S".

Run by Tessera (see examples/jobs/pytorch-ddp.yaml), or alone for a quick look:
    MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 RANK=0 WORLD_SIZE=1 /usr/bin/python3 examples/programs/ddp_train.py
"""

import argparse
import os
import random
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

CHECKPOINT_FILE = "checkpoint.pt"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300, help="planned optimizer steps in all")
    p.add_argument("--checkpoint-every", type=int, default=25, help="steps between checkpoints")
    p.add_argument("--checkpoint-every-seconds", type=float,
                   default=float(os.environ.get("TESSERA_CHECKPOINT_INTERVAL_SECONDS") or 0),
                   help="also checkpoint once this long has passed since the last save "
                        "(default: $TESSERA_CHECKPOINT_INTERVAL_SECONDS; 0: by steps only)")
    p.add_argument("--checkpoint-dir", default="",
                   help="where checkpoints go when TESSERA_CHECKPOINT_DIR is not set")
    p.add_argument("--batch-size", type=int, default=8, help="sequences per rank and step")
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--min-step-seconds", type=float, default=0.0,
                   help="pace: make each step last at least this long (demos and tests)")
    p.add_argument("--log-every", type=int, default=1)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cpu: gloo on CPU (anywhere); cuda: NCCL on GPU LOCAL_RANK of the "
                        "GPUs Tessera made visible (CUDA_VISIBLE_DEVICES)")
    return p.parse_args()


def log(prefix, msg):
    print(f"{prefix} {msg}", flush=True)


# --- Corpus: sentences from a small seeded grammar, so that there is structure to learn. ---
SUBJECTS = ["the cat", "a dog", "the scheduler", "my gpu", "the cluster", "every rank",
            "the model", "a worker"]
VERBS = ["sees", "trains", "waits for", "checkpoints", "preempts", "restarts", "loves", "finds"]
OBJECTS = ["the mat", "a gradient", "the queue", "its peers", "the loss", "a new node",
           "the spare gpus", "one more step"]


def make_corpus(seed, sentences=4000):
    rng = random.Random(seed)
    out = []
    for _ in range(sentences):
        out.append(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}.")
    return " ".join(out)


class TinyLM(nn.Module):
    """Token and position embeddings, a causal transformer encoder, a linear head."""

    def __init__(self, vocab, d_model, layers, heads, seq_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=2 * d_model,
                                           dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, vocab)
        mask = torch.triu(torch.full((seq_len, seq_len), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        n = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(n, device=x.device))
        h = self.body(h, mask=self.mask[:n, :n])
        return self.head(h)


def batch_for(data, step, rank, batch_size, seq_len, seed):
    # A batch depends only on (seed, step, rank): a resumed run sees the same data stream.
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 1009 + rank)
    starts = torch.randint(0, data.numel() - seq_len - 1, (batch_size,), generator=g)
    x = torch.stack([data[s:s + seq_len] for s in starts.tolist()])
    y = torch.stack([data[s + 1:s + seq_len + 1] for s in starts.tolist()])
    return x, y


def save_checkpoint(ckpt_dir, step, model, optimizer, losses, world):
    path = os.path.join(ckpt_dir, CHECKPOINT_FILE)
    tmp = f"{path}.tmp.{os.getpid()}"
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "python_rng": random.getstate(),
        "losses": losses,
        "world_size": world,
    }
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic: a reader sees the old checkpoint or the new one
    dfd = os.open(ckpt_dir, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def load_checkpoint(ckpt_dir):
    path = os.path.join(ckpt_dir, CHECKPOINT_FILE) if ckpt_dir else ""
    if not path or not os.path.exists(path):
        return None
    return torch.load(path, map_location="cpu", weights_only=False)


def main():
    args = parse_args()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    node_rank = os.environ.get("NODE_RANK", "0")
    attempt = os.environ.get("TESSERA_ATTEMPT", "-")
    ckpt_dir = os.environ.get("TESSERA_CHECKPOINT_DIR") or args.checkpoint_dir
    prefix = f"[rank {rank}]"

    stop = {"signal": 0}

    def on_signal(signum, _frame):
        stop["signal"] = signum  # acted on after the current step, by every rank together

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    torch.set_num_threads(1)  # one core per process; several ranks share a node
    log(prefix, f"RANK={rank} WORLD_SIZE={world} LOCAL_RANK={local_rank} "
                f"LOCAL_WORLD_SIZE={local_world} NODE_RANK={node_rank} "
                f"MASTER_ADDR={os.environ.get('MASTER_ADDR')} "
                f"MASTER_PORT={os.environ.get('MASTER_PORT')} "
                f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')} "
                f"TESSERA_ATTEMPT={attempt} TESSERA_CHECKPOINT_DIR={ckpt_dir} "
                f"TESSERA_CHECKPOINT_INTERVAL_SECONDS="
                f"{os.environ.get('TESSERA_CHECKPOINT_INTERVAL_SECONDS', '')}")

    t0 = time.monotonic()
    if args.device == "cuda":
        if not torch.cuda.is_available():
            log(prefix, "--device cuda: no GPU visible (CUDA_VISIBLE_DEVICES="
                        f"{os.environ.get('CUDA_VISIBLE_DEVICES', '')!r})")
            return 2
        # One process per GPU: this rank's GPU is LOCAL_RANK among the visible ones.
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        log(prefix, f"device {device}: {torch.cuda.get_device_name(device)}")
    else:
        device = torch.device("cpu")
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world)
    log(prefix, f"rendezvous done: {world} ranks in {time.monotonic() - t0:.2f} s")

    text = make_corpus(args.seed)
    vocab = sorted(set(text))
    stoi = {c: i for i, c in enumerate(vocab)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)

    torch.manual_seed(args.seed)  # identical initial weights on every rank
    random.seed(args.seed)
    model = TinyLM(len(vocab), args.d_model, args.layers, args.heads, args.seq_len).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    step = 0
    losses = []
    if ckpt_dir:
        os.makedirs(ckpt_dir, exist_ok=True)
        ckpt = load_checkpoint(ckpt_dir)
        if ckpt is not None:
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            torch.set_rng_state(ckpt["torch_rng"])
            random.setstate(ckpt["python_rng"])
            step = ckpt["step"]
            losses = ckpt.get("losses", [])
            saved_by = ckpt.get("world_size", "?")
            log(prefix, f"resumed from step {step} (saved by {saved_by} ranks, now {world})")
        else:
            log(prefix, "no checkpoint: starting at step 0")
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    log(prefix, f"model: {sum(p.numel() for p in model.parameters())} parameters, "
                f"vocab {len(vocab)}, {args.layers} layers, d={args.d_model}")

    def checkpoint(reason):
        if rank == 0 and ckpt_dir:
            save_checkpoint(ckpt_dir, step, model, optimizer, losses, world)
            log(prefix, f"checkpoint saved at step {step} ({reason})")
        dist.barrier()  # nobody exits or moves on before the checkpoint is on disk

    last_save = time.monotonic()
    while step < args.steps:
        started = time.monotonic()
        x, y = batch_for(data, step, rank, args.batch_size, args.seq_len, args.seed)
        x, y = x.to(device), y.to(device)
        logits = ddp(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        # One all-reduce carries the mean loss and whether any rank was asked to stop, so that
        # every rank stops after the same step.
        pace = args.min_step_seconds - (time.monotonic() - started)
        if pace > 0:
            time.sleep(pace)
        # Rank 0's clock decides a time-based checkpoint; the all-reduce tells every rank, which
        # all take part in the checkpoint's barrier after the same step.
        due = (rank == 0 and args.checkpoint_every_seconds > 0
               and time.monotonic() - last_save >= args.checkpoint_every_seconds)
        flags = torch.tensor([loss.item(), 1.0 if stop["signal"] else 0.0, 1.0 if due else 0.0],
                             device=device)
        dist.all_reduce(flags)
        mean_loss = flags[0].item() / world
        losses.append(round(mean_loss, 4))
        if step % args.log_every == 0 or step == args.steps:
            log(prefix, f"step {step} loss {mean_loss:.4f}")
        if flags[1].item() > 0:
            name = signal.Signals(stop["signal"]).name if stop["signal"] else "peer stopped"
            log(prefix, f"{name} received: stopping after step {step}")
            checkpoint(name)
            dist.destroy_process_group()
            return 0
        by_steps = args.checkpoint_every > 0 and step % args.checkpoint_every == 0
        if step < args.steps and (by_steps or flags[2].item() > 0):
            checkpoint("interval" if by_steps else "time")
            last_save = time.monotonic()

    checkpoint("final")
    first = losses[0] if losses else float("nan")
    log(prefix, f"training finished at step {step}, loss {first:.4f} -> {losses[-1]:.4f}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
