"""Picture of a side-by-side run (scripts/olmo_core_demo.sh): OUT/{ours1,ref1[,ours2,ref2]}.
Top: train loss of olmo.cpp and OLMo-core per step (stage 2 drawn after stage 1). Middle (log
scale): |olmo.cpp - OLMo-core| of the loss and of the grad norm per step, against the loss noise
floor; bottom: the same for the z-loss against its own floor. Floor: the larger |OLMo-core -
twin| of its 1-ulp and float64-clip-norm twins (scripts/noise_floor.py), running max; bound: K x
floor, K = validation.reference_floor_multiple (monitor/reference_run.h).
usage: plot_reference.py OUT --out PNG [--floor-multiple K (20)]
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def train(run):
    out = {}
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "train":
                out[r["step"]] = r
    return out


def stage(out, a, b, offset):
    ours, ref = train(os.path.join(out, a)), train(os.path.join(out, b))
    nf = json.load(open(os.path.join(out, b, "noise_floor.json")))
    steps = sorted(s for s in ref if s in ours)
    res = {"x": np.array(steps) + offset}
    for q in ("loss", "grad_norm", "z_loss"):
        # The reference's grad norm: the float64 norm of its gradient when recorded (its logged
        # one is torch's fp32 norm).
        rq = "grad_norm_f64" if q == "grad_norm" and ref[steps[0]].get("grad_norm_f64") else q
        res[q + "_ours"] = np.array([ours[s][q] for s in steps])
        res[q + "_ref"] = np.array([ref[s][rq] for s in steps])
        res[q + "_diff"] = np.abs(res[q + "_ours"] - res[q + "_ref"])
        fk = rq if rq in nf["train"] else q  # the floor olmo compare bounds it by
        fl = np.array([nf["train"][fk].get(str(s)) or 0.0 for s in steps])
        res[q + "_floor"] = np.maximum.accumulate(fl)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--out", dest="png", required=True)
    ap.add_argument("--floor-multiple", type=float, default=20.0)
    a = ap.parse_args()
    K = a.floor_multiple
    stages = [stage(a.out, "ours1", "ref1", 0)]
    if os.path.exists(os.path.join(a.out, "ref2", "noise_floor.json")):
        stages.append(stage(a.out, "ours2", "ref2", int(stages[0]["x"][-1])))
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(9, 10), sharex=True,
                                        gridspec_kw={"height_ratios": [3, 3, 2]})
    for i, s in enumerate(stages):
        lab = (lambda t: t) if i == 0 else (lambda t: None)
        ax1.plot(s["x"], s["loss_ours"], color="C0", lw=1.2, label=lab("olmo.cpp"))
        ax1.plot(s["x"], s["loss_ref"], color="C1", lw=1.0, ls="--", label=lab("OLMo-core 3.0.0 Trainer"))
        ax2.semilogy(s["x"], np.maximum(s["loss_diff"], 1e-9), color="C0", lw=1,
                     label=lab("|loss: olmo.cpp - OLMo-core|"))
        ax2.semilogy(s["x"], np.maximum(s["grad_norm_diff"], 1e-9), color="C2", lw=1,
                     label=lab("|grad norm: olmo.cpp - OLMo-core|"))
        ax2.fill_between(s["x"], 1e-9, np.maximum(s["loss_floor"], 1e-9), color="C1", alpha=0.25,
                         label=lab("loss noise floor (OLMo-core vs its twins)"))
        ax2.semilogy(s["x"], K * np.maximum(s["loss_floor"], 1e-9), color="C3", lw=1, ls=":",
                     label=lab(f"loss bound ({K:g} x floor)"))
        ax3.semilogy(s["x"], np.maximum(s["z_loss_diff"], 1e-13), color="C0", lw=1,
                     label=lab("|z-loss: olmo.cpp - OLMo-core|"))
        ax3.fill_between(s["x"], 1e-13, np.maximum(s["z_loss_floor"], 1e-13), color="C1",
                         alpha=0.25, label=lab("z-loss noise floor"))
        ax3.semilogy(s["x"], K * np.maximum(s["z_loss_floor"], 1e-13), color="C3", lw=1, ls=":",
                     label=lab(f"z-loss bound ({K:g} x floor, without the 1e-6 x |ref| slack)"))
    if len(stages) > 1:
        for ax in (ax1, ax2, ax3):
            ax.axvline(stages[0]["x"][-1] + 0.5, color="gray", lw=0.8)
        ax1.text(stages[0]["x"][-1] + 1, ax1.get_ylim()[1], " stage 2", va="top", color="gray")
    ax1.set_ylabel("train CE loss (nats)")
    ax1.legend()
    ax2.set_ylabel("absolute difference")
    ax2.legend(fontsize=8, loc="lower right")
    ax3.set_ylabel("absolute difference")
    ax3.set_xlabel("step")
    ax3.legend(fontsize=8, loc="lower right")
    ax1.set_title("olmo.cpp vs OLMo-core's own Trainer, same weights, data and recipe")
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    print("wrote", a.png)


if __name__ == "__main__":
    main()
