"""Any partition, same bits (issue 47): under dist.reduce=exact the instance is the unit of
exactness, so a step's result depends on its global batch only.

The tiny model with 8 instances of 64 tokens per step (one thread per rank):
1. Seeded random partitions: world sizes 1-4 (3 ranks hold 3, 3 and 2 instances), random
   data.micro_batch_tokens (any multiple of seq_len, up to more than a rank holds), both exact
   accumulators, dist.overlap on and off, ZeRO-2 and ZeRO-3 (uneven ranks run padding rounds
   where the reduction is collective per round); every per-step record (loss, grad norm, LR, batch
   hash) and every tensor of the final checkpoint (weights, both AdamW moments) bitwise equal
   to the 1-process run with 8-instance micro-batches.
2. Resized 1 -> 3 -> 4 -> 2 processes (2 steps each), the third stage resuming with
   data.micro_batch_tokens halved: bitwise equal to the run that never changed, checkpoint by
   checkpoint, and no recipe change is logged for the micro-batch.
3. dist.reduce=fast keeps its constraint: -np 3 with 2 micro-batches is refused, naming it and
   the exact mode.
Env: OLMO_BIN, OLMO_MPIRUN. Exit 0 = pass.
"""
import os
import random
import shutil
import tempfile

import dist_util as du
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

STEPS = 4


def over(data, run, micro, steps=STEPS, extra=()):
    # 8 instances of 64 tokens per step; micro-batches of `micro` tokens.
    return du.base_overrides(data, run, steps=steps, extra=[
        "data.global_batch_tokens=512", f"data.micro_batch_tokens={micro}",
        "trainer.save_interval=2", "trainer.keep_last=100", *extra])


def same(label, run, ref, step=None):
    d = os.path.join(run, f"step{step}") if step else du.final_dir(run)
    rd = os.path.join(ref, f"step{step}") if step else du.final_dir(ref)
    got = [r for r in du.steps(run).items() if step is None or r[0] <= step]
    want = [r for r in du.steps(ref).items() if step is None or r[0] <= step]
    check(got == want, f"{label}: per-step records differ from the 1-process run")
    check(os.path.basename(d) == os.path.basename(rd) and
          du.bitwise_equal(du.tensors(d), du.tensors(rd)),
          f"{label}: {os.path.basename(d)} tensors not bitwise equal to the 1-process run")


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_partition_")
    try:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 12)
        ref = os.path.join(tmp, "ref")
        du.train(1, over(data, ref, 512))
        check(len(du.steps(ref)) == STEPS, f"reference: {len(du.steps(ref))} steps")

        # 1. seeded random partitions
        rng = random.Random(47)
        plans = [(1, 64, "auto", True, 2), (3, 128, "auto", True, 2), (4, 192, "sharded", True, 2),
                 (2, 320, "local", False, 2), (3, 64, "sharded", True, 3), (3, 128, "local", True, 3)]
        for _ in range(3):
            plans.append((rng.randint(1, 4), 64 * rng.randint(1, 9),
                          rng.choice(("auto", "local", "sharded")), rng.random() < 0.5,
                          rng.choice((2, 3))))
        for i, (n, micro, acc, overlap, zs) in enumerate(plans):
            run = os.path.join(tmp, f"p{i}")
            du.train(n, over(data, run, micro, extra=[f"dist.exact_accumulator={acc}",
                                                      f"dist.overlap={str(overlap).lower()}",
                                                      f"dist.zero_stage={zs}"]))
            same(f"np {n}, micro_batch_tokens {micro}, accumulator {acc}, overlap {overlap}, "
                 f"ZeRO-{zs}", run, ref)
            shutil.rmtree(run)
        print("random partitions", plans, "bitwise equal to np 1", flush=True)

        # 2. 1 -> 3 -> 4 -> 2, micro-batch halved at the third stage (256 -> 128 tokens)
        ref8 = os.path.join(tmp, "ref8")
        du.train(1, over(data, ref8, 256, steps=8))
        rs = os.path.join(tmp, "resized")
        for n, micro, stop in ((1, 256, 2), (3, 256, 4), (4, 128, 6), (2, 128, 8)):
            du.train(n, over(data, rs, micro, steps=8, extra=[f"trainer.hard_stop_steps={stop}"]))
            same(f"resized, np {n} to step {stop}", rs, ref8, stop)
        changes = [r for r in ot.read_metrics(rs, "info") if r.get("event") == "recipe_change"]
        check(changes == [], f"micro-batch change logged as a recipe change: {changes}")
        print("1 -> 3 -> 4 -> 2 with micro_batch_tokens 256 -> 128: bitwise equal", flush=True)

        # 3. fast keeps W | micro-batches
        bad = du.train(3, over(data, os.path.join(tmp, "fast3"), 256,
                               extra=["dist.reduce=fast"]), check=False)
        check(bad.returncode != 0 and "does not divide the 2 micro-batches" in bad.stderr and
              "dist.reduce=exact runs on any number up to 8" in bad.stderr,
              f"fast on np 3: expected a clear error, got rc {bad.returncode}: "
              f"{bad.stderr[-400:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("partition")


if __name__ == "__main__":
    main()
