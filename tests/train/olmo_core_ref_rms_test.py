"""Per-group weight RMS and update RMS against OLMo-core's own Trainer (issue 37 item 6), tiny
scale (tests/configs/tiny.yaml stopped at step 10 by trainer.hard_stop_steps: the schedule is the
20-step one), end to end with `olmo train` and `olmo compare RUN REF`:
  1. scripts/olmo_core_run.py --noise-floor --held-out-twin records {"kind":"param_rms"} at every
     step (14 groups, weight and update RMS computed on OLMo-core's model) in the reference, both
     twins and the held-out twin, and noise_floor.json holds a param_rms floor per group, built
     from noise_twin and clip_twin only;
  2. olmo.cpp from the same initial weights records the same groups, and `olmo compare` is in
     tolerance (exit 0) with a param_rms row per group; no false alarm on OLMo-core itself: the
     held-out twin (another 1-ulp perturbation, which did not build the floor and is not equal
     to the reference) compared as the run is in tolerance. A floor twin could not fail that
     check (its distance is at most the floor, the bound 20x it). Its other way: the held-out
     twin given a 1.1x lr multiplier on layer 1's attn_q (OLMO_TEST_PARAM_SCALE on the OLMo-core
     side, scripts/ref_faults.py) is flagged naming param_rms.*.attn_q.1;
  3. recipe deviations the loss does not show yet are flagged (exit 3) within 20 steps, the
     earliest violation naming the deviating group: weight decay on the embeddings
     (optim.embedding_weight_decay=0.1: param_rms.*.embed), and through the test-only
     OLMO_TEST_PARAM_SCALE switch (src/train/test_faults.h) a frozen attn_k, a double-stepped
     mlp_down and a 1.1x lr multiplier on attn_q; every one of these is first flagged at step 1,
     so the step bound is tested by a deviation that starts late: a 1.1x lr multiplier on attn_q
     from step 6 (GROUP:X:FROM) must be flagged at a step in [6, 8] -- not before it starts (no
     false alarm) and within 2 steps (the bound can fail both ways in the 10 steps); and a
     1.1x lr multiplier on one layer's tensor (attn_q.1) must be flagged naming that tensor
     (the records also hold every block tensor alone, GROUP.LAYER) and no other layer's;
  4. a run without the records (trainer.param_rms_interval=0) is flagged ("param_rms record"),
     and the fault switch is refused without allow_fault_injection / with an unknown group.
"""
import atexit
import json
import os
import re
import tempfile

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data
from olmo_test.refs import compare, first_violation, reference, start_held_out_twin

GROUPS = ["embed", "attn_q", "attn_k", "attn_v", "attn_o", "q_norm", "k_norm", "mlp_gate",
          "mlp_up", "mlp_down", "attn_norm", "mlp_norm", "final_norm", "lm_head"]
STEPS = 10
BLOCK = GROUPS[1:12]  # the block tensors' groups, recorded per layer too (GROUP.LAYER)
LAYERS = 4  # tests/configs/tiny.yaml
LAYER_KEYS = [f"{g}.{i}" for g in BLOCK for i in range(LAYERS)]


def keys_ok(rec):
    """The record's weight and update hold the 14 groups (in order) and every GROUP.LAYER."""
    return all([k for k in rec[p] if "." not in k] == GROUPS and
               sorted(k for k in rec[p] if "." in k) == sorted(LAYER_KEYS)
               for p in ("weight", "update"))


def violations(out):
    """(first step, [quantities out of tolerance at that step]) of `olmo compare`'s output."""
    hits = [(int(s), q) for s, q in re.findall(r"OUT OF TOLERANCE step (\d+) (\S+):", out)]
    if not hits:
        return None, []
    first = min(s for s, _ in hits)
    return first, [q for s, q in hits if s == first]


def check_one_layer(what, rc, out):
    """`olmo compare`'s (exit, output) of a run with lr x1.1 on layer 1's attn_q alone: flagged
    (exit 3) within 20 steps, the first step's violations naming attn_q.1 and no other layer's
    tensor."""
    step, qs = violations(out)
    layers = sorted({q.split(".", 2)[2] for q in qs if q.startswith("param_rms.") and
                     "." in q.split(".", 2)[2]})
    print(f"{what}: exit {rc}, first step {step}: {qs}")
    check(rc == 3 and step is not None and step <= 20 and layers == ["attn_q.1"],
          f"{what}: flagged naming param_rms.*.attn_q.1 and no other layer's tensor (exit {rc}, "
          f"step {step}, layer tensors {layers})")


def names_group(q, group):
    return bool(q) and re.fullmatch(rf"param_rms\.(weight|update)\.{group}(\.\d+)?", q) is not None


def ours(run, ref, common, *over, env=None):
    args = ["train", tiny_data.tiny_config(), *common, *over, f"trainer.run_dir={run}",
            f"trainer.init_from_hf={ref}/init_hf", "trainer.log_batch_indices=true"]
    if env is None:
        return ot.olmo(*args)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return ot.olmo(*args, check=False)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main():
    with tempfile.TemporaryDirectory() as tmp:
        d = tiny_data.make_data(os.path.join(tmp, "data"))
        common = [f"data.mix={d['mix']}", f"trainer.hard_stop_steps={STEPS}"]
        ref = os.path.join(tmp, "ref")
        p = reference(tiny_data.tiny_config(), common, ref, held_out=True)
        check(p.returncode == 0, "olmo_core_run.py --noise-floor --held-out-twin succeeds")
        if p.returncode != 0:
            finish("olmo_core_ref_rms")
        held = os.path.join(ref, "held_twin")
        # The held-out twin with a real deviation, in the background while olmo.cpp runs (all
        # STEPS steps: `olmo compare` flags a shorter run's missing steps).
        held_dev = os.path.join(tmp, "held_dev")
        held_dev_p = start_held_out_twin(tiny_data.tiny_config(),
                                         [*common, "allow_fault_injection=true"], ref, held_dev,
                                         env={"OLMO_TEST_PARAM_SCALE": "attn_q.1:1.1"})
        atexit.register(lambda: held_dev_p.poll() is None and held_dev_p.kill())
        # 1. The reference's records and floor.
        for run in (ref, os.path.join(ref, "noise_twin"), os.path.join(ref, "clip_twin"), held):
            recs = ot.read_metrics(run, "param_rms")
            check([r["step"] for r in recs] == list(range(1, STEPS + 1)) and
                  all(keys_ok(r) for r in recs),
                  f"{os.path.basename(run)}: param_rms at steps 1..{STEPS}, 14 groups and "
                  f"{len(LAYER_KEYS)} layer tensors")
        nf = json.load(open(os.path.join(ref, "noise_floor.json")))
        check(sorted(nf.get("param_rms", {})) == sorted(f"{p}.{g}" for p in ("weight", "update")
                                                        for g in GROUPS + LAYER_KEYS)
              and all(v > 0 for k, v in nf["largest"].items() if k.startswith("param_rms.")),
              "noise_floor.json: a non-zero param_rms floor per group and layer tensor (weight "
              "and update)")
        check(sorted(nf["twins"]) == ["clip_twin", "noise_twin"] and
              {n for steps in nf["set_by"].values() for n in steps.values()} <= set(nf["twins"]),
              f"the floor is built from noise_twin and clip_twin only, not held_twin "
              f"(twins {sorted(nf['twins'])})")
        # A genuine sample of the noise: the held-out twin is not the reference.
        a, b = ot.read_metrics(ref), ot.read_metrics(held)
        moved = [r["step"] for r, t in zip(a, b) if r["loss"] != t["loss"]]
        same = [r["step"] for r, t in zip(ot.read_metrics(ref, "param_rms"),
                                           ot.read_metrics(held, "param_rms"))
                if any(r["weight"][k] == t["weight"][k] for k in r["weight"])]
        check(len(a) == len(b) == STEPS and moved and not same,
              f"held_twin is not the reference: its loss differs at steps {moved}, every weight "
              f"RMS at every step (equal somewhere at steps {same})")

        # 2. olmo.cpp within the floor; the held-out twin too.
        clean = os.path.join(tmp, "clean")
        ours(clean, ref, common)
        recs = ot.read_metrics(clean, "param_rms")
        check([r["step"] for r in recs] == list(range(1, STEPS + 1)) and
              all(sorted(r["weight"]) == sorted(GROUPS + LAYER_KEYS) == sorted(r["update"])
                  for r in recs),
              "olmo.cpp records param_rms at every step, the same 14 groups and layer tensors")
        rc, out = compare(clean, ref)
        print(out)
        check(rc == 0, f"clean run: olmo compare exits 0 (got {rc})")
        check(all(re.search(rf"^param_rms\.{p}\.{g} +{STEPS} ", out, re.M)
                  for p in ("weight", "update") for g in GROUPS),
              f"the table has a param_rms row per group, {STEPS} steps checked")
        rc, out = compare(held, ref)
        check(rc == 0, f"held_twin (not in the floor) compared as the run: in tolerance, no false "
              f"alarm (got {rc}): " + (first_violation(out)[1] or ""))

        # 3. Deviations, flagged naming the group.
        for name, over, env, group in (
                ("wd on embeddings", ["optim.embedding_weight_decay=0.1"], None, "embed"),
                ("frozen attn_k", [], "attn_k:0", "attn_k"),
                ("double-stepped mlp_down", [], "mlp_down:2", "mlp_down"),
                ("lr x1.1 on attn_q", [], "attn_q:1.1", "attn_q")):
            run = os.path.join(tmp, "dev_" + group)
            if env:
                p = ours(run, ref, common, "allow_fault_injection=true",
                         env={"OLMO_TEST_PARAM_SCALE": env})
                check(p.returncode == 0, f"{name}: olmo train runs ({p.stderr[-300:]})")
            else:
                ours(run, ref, common, *over)
            rc, out = compare(run, ref)
            step, q = first_violation(out)
            loss_first = re.search(r"OUT OF TOLERANCE step (\d+) (train|validation)\.", out)
            m = re.search(rf"^param_rms\.{q.split('.')[1] if q else 'weight'}\.{group} .*$", out,
                          re.M) if q and q.startswith("param_rms.") else None
            print(f"deviation {name}: exit {rc}, first violation step {step} {q}; first loss-side "
                  f"violation: {loss_first.group(0) if loss_first else 'none'}; "
                  f"row: {m.group(0) if m else '-'}")
            check(rc == 3 and step is not None and step <= 20 and names_group(q, group),
                  f"{name}: flagged within 20 steps naming param_rms.*.{group} "
                  f"(exit {rc}, step {step}, {q})")

        # 3b. A deviation that starts at step 6: flagged in [6, 8], naming attn_q.
        def deviate(what, spec):
            """olmo train under OLMO_TEST_PARAM_SCALE=spec; (exit, output) of olmo compare."""
            run = os.path.join(tmp, "dev_" + spec.replace(":", "_"))
            p = ours(run, ref, common, "allow_fault_injection=true",
                     env={"OLMO_TEST_PARAM_SCALE": spec})
            check(p.returncode == 0, f"{what}: olmo train runs ({p.stderr[-300:]})")
            return compare(run, ref)

        rc, out = deviate("late deviation", "attn_q:1.1:6")
        step, q = first_violation(out)
        print(f"deviation lr x1.1 on attn_q from step 6: exit {rc}, first violation step {step} {q}")
        check(rc == 3 and step is not None and 6 <= step <= 8 and names_group(q, "attn_q"),
              f"lr x1.1 on attn_q from step 6: flagged at a step in [6, 8] naming "
              f"param_rms.*.attn_q (exit {rc}, step {step}, {q})")

        # 3c. A deviation in one layer's tensor (its group pools 4 layers): caught and named.
        check_one_layer("lr x1.1 on layer 1's attn_q alone",
                        *deviate("one-layer deviation", "attn_q.1:1.1"))

        # 3d. The held-out twin given the same one-layer deviation on the OLMo-core side: flagged.
        rc = held_dev_p.wait()
        check(rc == 0, f"held-out twin with lr x1.1 on attn_q.1: olmo_core_run.py runs (exit {rc}): "
              + open(held_dev + ".log").read()[-300:])
        check_one_layer("held-out twin with lr x1.1 on layer 1's attn_q (OLMo-core side)",
                        *compare(held_dev, ref))

        # 4. No records; the switch's bad input.
        off = os.path.join(tmp, "off")
        ours(off, ref, common, "trainer.param_rms_interval=0")
        rc, out = compare(off, ref)
        check(rc == 3 and "param_rms record" in out and "trainer.param_rms_interval" in out,
              f"a run without param_rms records is flagged (exit {rc})")
        p = ours(os.path.join(tmp, "refused"), ref, common, env={"OLMO_TEST_PARAM_SCALE": "embed:0"})
        check(p.returncode != 0 and "allow_fault_injection" in p.stderr,
              "OLMO_TEST_PARAM_SCALE refused without allow_fault_injection: " + p.stderr.strip()[-160:])
        p = ours(os.path.join(tmp, "badgroup"), ref, common, "allow_fault_injection=true",
                 env={"OLMO_TEST_PARAM_SCALE": "wq:2"})
        check(p.returncode != 0 and "GROUP[.LAYER]:X" in p.stderr and "embed" in p.stderr,
              "OLMO_TEST_PARAM_SCALE with an unknown group refused: " + p.stderr.strip()[-160:])
    finish("olmo_core_ref_rms")


if __name__ == "__main__":
    main()
