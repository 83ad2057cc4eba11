"""README "Commands": `olmo bench step --preset NAME --seq S --batch B [--optimizer]` gives
"tokens/s, GFLOP/s and MFU against the fp32 peak measured on the spot", end to end
(olmo3-tiny, seq 64, batch 2, with and without --optimizer).

Checks, from the printed report (the figures must follow from each other as their definitions
say; the printed values are rounded, so each within its rounding):
  - tokens/s = seq x batch / the mean s/step;
  - GFLOP/s = tokens/s x flops/token / 1e9;
  - the fp32 peak is measured on the spot (before and after the timed steps, both > 0); the peak
    MFU is against is the higher of the two, or the achieved GFLOP/s when that is higher (then
    said on a "peak raised to the achieved" line), and MFU = GFLOP/s / that peak <= 100%;
  - `olmo info --preset olmo3-tiny --seq 64 --json` reports the same FLOPs per token (ours);
  - a bad preset is an error naming it.
Seen red: an OLMO_BIN shim that rewrites the MFU line to twice its value fails the MFU check.
Cost: ~6 s (two short benches with peak measurements).
"""
import json
import re

import olmo_test as ot
from olmo_test import check, finish

SEQ, BATCH = 64, 2


def field(out, pat):
    m = re.search(pat, out)
    return [float(x) for x in m.groups()] if m else None


def bench(*extra):
    p = ot.olmo("bench", "step", "--preset", "olmo3-tiny", "--seq", str(SEQ), "--batch", str(BATCH),
                *extra)
    out = p.stdout + p.stderr
    what = "bench step" + (" " + " ".join(extra) if extra else "")
    fpt = field(out, r"flops/token\s+([0-9.e+]+)")
    mean = field(out, r"([0-9.]+) s/step mean")
    tps = field(out, r"tokens/s\s+([0-9.]+)")
    gfs = field(out, r"GFLOP/s\s+([0-9.]+)\n")
    peak = field(out, r"fp32 peak GFLOP/s ([0-9.]+) before, ([0-9.]+) after \(highest ([0-9.]+)\)")
    mfu = field(out, r"MFU\s+([0-9.]+)% \(against the fp32 peak of ([0-9.]+) GFLOP/s\)")
    raised = field(out, r"peak raised to the achieved ([0-9.]+) GFLOP/s")
    ok = None not in (fpt, mean, tps, gfs, peak, mfu)
    if not check(ok, f"{what}: every figure printed" + ("" if ok else "\n" + out)):
        return None
    tok = SEQ * BATCH
    # Rounding: s/step to 1e-3 s, tokens/s and GFLOP/s to 0.1, MFU to 0.1 points.
    lo, hi = tok / (mean[0] + 5e-4), tok / max(mean[0] - 5e-4, 1e-9)
    check(lo - 0.05 <= tps[0] <= hi + 0.05, f"{what}: tokens/s {tps[0]} = {tok} / {mean[0]} s")
    check(abs(gfs[0] - tps[0] * fpt[0] / 1e9) <= 0.05 + 0.05 * fpt[0] / 1e9 + 1e-3 * gfs[0],
          f"{what}: GFLOP/s {gfs[0]} = {tps[0]} x {fpt[0]:.4g} / 1e9")
    before, after, probed = peak
    check(before > 0 and after > 0 and abs(probed - max(before, after)) <= 0.1,
          f"{what}: fp32 peak measured on the spot: {before} before, {after} after, peak {probed}")
    used = mfu[1]
    # The peak used: the higher probe, or the achieved rate above it (said once).
    want_peak = max(probed, raised[0]) if raised else probed
    check(abs(used - want_peak) <= 0.1 and (raised is None or raised[0] >= gfs[0] - 0.1),
          f"{what}: MFU against the peak {used} = max(probes {probed}, raised {raised})")
    want = 100 * gfs[0] / used
    tol = 0.05 + 100 * 0.05 / used + 100 * gfs[0] * 0.05 / used ** 2 + 0.01 * want
    check(abs(mfu[0] - want) <= tol and mfu[0] <= 100.0, f"{what}: MFU {mfu[0]}% = {gfs[0]} / "
          f"{used} ({want:.2f}% +- {tol:.2f}), at most 100%")
    return fpt[0]


def main():
    fpt = bench()
    bench("--optimizer")
    info = json.loads(ot.olmo("info", "--preset", "olmo3-tiny", "--seq", str(SEQ), "--json").stdout)
    ref = info.get("flops_per_token")
    if isinstance(ref, dict):
        ref = ref.get("ours")
    check(fpt is not None and ref is not None and abs(fpt - float(ref)) <= 5e-4 * float(ref),
          f"flops/token {fpt} = `olmo info`'s {ref}")
    p = ot.olmo("bench", "step", "--preset", "no-such-preset", "--seq", "8", "--batch", "1",
                check=False)
    check(p.returncode != 0 and "no-such-preset" in p.stdout + p.stderr,
          f"a bad preset is an error naming it (rc {p.returncode})")
    finish("claims_bench_step_test")


if __name__ == "__main__":
    main()
