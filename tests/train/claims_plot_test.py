"""README "Commands": `olmo plot RUN_DIR` draws "train / held-out loss curves to PNG" (the demo's
picture: validation records beside the eval points), end to end: a 40-step tiny run with
held-out evaluation every 10 steps and validation every 5, then `olmo plot RUN_DIR` and
`olmo plot RUN_DIR --out FILE`.

Form (scripts/plot_run.py's contract): the PNG is RUN_DIR/loss.png by default (or --out), its
path printed; a real PNG (signature, IHDR) of 960 x 600 pixels (8 x 5 in at 120 dpi); a run dir
without metrics.jsonl is an error naming the file.
Data, read back from the pixels (PIL) against metrics.jsonl (read here with json): the axes box
is found from its black spines, the axis limits follow matplotlib's documented autoscaling
(data range of every plotted series + 5% margins, `axes.xmargin` / `axes.ymargin`), and then
  - each train record (step, loss) lies on a blue (C0) curve pixel within 2 px, for >= 95% of
    the steps (the legend may cover a few);
  - each held-out eval record (set "val") and each validation record's held-out loss lies on an
    orange (C1: the eval set's colour, shared by its validation line) pixel within 2 px;
  - the same test with the train losses in reverse order or shifted by 10% of the y range
    matches far less (the check can fail).
Seen red: plot_run.py drawing the train loss one step late (steps + 1) and, separately,
dropping the validation series each fail the data checks.
Cost: ~4 s (the run 0.5 s, matplotlib ~1.5 s per plot).
"""
import os
import shutil
import struct
import tempfile

import numpy as np
from PIL import Image

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td


def series(run):
    """train {step: loss}, eval {step: loss} (set val), validation {step: loss} from metrics.jsonl;
    the last record of a step wins (as the README's resumed runs)."""
    tr, ev, va = {}, {}, {}
    for r in ot.read_metrics(run, None):
        if r.get("kind") == "train" and r.get("loss") is not None:
            tr[r["step"]] = r["loss"]
        elif r.get("kind") == "eval" and r.get("set") == "val":
            ev[r["step"]] = r["loss"]
        elif r.get("kind") == "validation" and (r.get("heldout") or {}).get("val") is not None:
            va[r["step"]] = r["heldout"]["val"]
    return tr, ev, va


def axes_box(img):
    """Pixel columns of the left/right spines and rows of the top/bottom ones."""
    dark = img.sum(axis=2) < 150
    H, W = dark.shape
    cols = [x for x in range(W) if dark[:, x].sum() > 0.6 * H]
    rows = [y for y in range(H) if dark[y, :].sum() > 0.6 * W]
    assert cols and rows, "no axes spines found"
    return min(cols), max(cols), min(rows), max(rows)


def mapper(img, xs, ys):
    x0, x1, y0, y1 = axes_box(img)
    xlo, xhi = min(xs), max(xs)
    ylo, yhi = min(ys), max(ys)
    dx, dy = 0.05 * (xhi - xlo), 0.05 * (yhi - ylo)
    xlo, xhi, ylo, yhi = xlo - dx, xhi + dx, ylo - dy, yhi + dy
    return lambda x, y: (x0 + (x - xlo) / (xhi - xlo) * (x1 - x0),
                         y1 - (y - ylo) / (yhi - ylo) * (y1 - y0))


def near(img, px, py, colour, r=2):
    h, w, _ = img.shape
    ys, xs = slice(max(0, int(round(py)) - r), min(h, int(round(py)) + r + 1)), \
        slice(max(0, int(round(px)) - r), min(w, int(round(px)) + r + 1))
    p = img[ys, xs].astype(int)
    R, G, B = p[..., 0], p[..., 1], p[..., 2]
    if colour == "blue":  # C0 #1f77b4, also at alpha 0.4 over white
        return bool(((B - R > 40) & (B > G)).any())
    return bool(((R > 200) & (R - B > 120) & (G > 90) & (G < 190)).any())  # orange C1 #ff7f0e


def fraction(img, pos, pts, colour):
    return sum(near(img, *pos(s, v), colour) for s, v in pts) / max(1, len(pts))


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_plot_")
    try:
        d = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 8 * 60)
        run = os.path.join(tmp, "run")
        ot.olmo("train", td.tiny_config(), f"data.mix={d['mix']}", f"eval.sets.val={d['val']}",
                f"trainer.run_dir={run}", "trainer.max_steps=40", "trainer.threads=1",
                "eval.interval=10", "validation.interval=5")
        p = ot.olmo("plot", run)
        png = os.path.join(run, "loss.png")
        check(p.stdout.strip().endswith(png) and os.path.isfile(png),
              f"default output RUN_DIR/loss.png, path printed ({p.stdout.strip()!r})")
        other = os.path.join(tmp, "other.png")
        p = ot.olmo("plot", run, "--out", other)
        check(os.path.isfile(other) and p.stdout.strip().endswith(other), "--out FILE written")
        raw = open(png, "rb").read()
        ok = raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR"
        w, h = struct.unpack(">II", raw[16:24]) if ok else (0, 0)
        check(ok and (w, h) == (960, 600), f"a PNG of 960 x 600 pixels (got {w} x {h})")

        tr, ev, va = series(run)
        check(len(tr) == 40 and sorted(ev) == [0, 10, 20, 30, 40] and len(va) >= 8,
              f"the run logged 40 train, {len(ev)} eval and {len(va)} validation records")
        img = np.asarray(Image.open(png).convert("RGB"))
        steps = sorted(tr)
        loss = [tr[s] for s in steps]
        mean = [sum(loss[i - 19:i + 1]) / 20 for i in range(19, len(loss))]
        xs = steps + list(ev) + list(va)
        ys = loss + mean + list(ev.values()) + list(va.values())
        pos = mapper(img, xs, ys)
        f_tr = fraction(img, pos, tr.items(), "blue")
        check(f_tr >= 0.95, f"train records on the blue curve: {f_tr:.0%} of {len(tr)}")
        f_ev = fraction(img, pos, ev.items(), "orange")
        check(f_ev == 1, f"eval records on orange markers: {f_ev:.0%} of {len(ev)}")
        f_va = fraction(img, pos, va.items(), "orange")
        check(f_va == 1, f"validation records on the orange dashed line: {f_va:.0%} of {len(va)}")
        span = max(ys) - min(ys)
        rev = list(zip(steps, reversed(loss)))
        up = [(s, v + 0.1 * span) for s, v in tr.items()]
        f_rev, f_up = fraction(img, pos, rev, "blue"), fraction(img, pos, up, "blue")
        check(f_rev < 0.6 and f_up < 0.6, f"wrong data does not match: reversed {f_rev:.0%}, "
              f"shifted {f_up:.0%}")

        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        p = ot.olmo("plot", empty, check=False)
        check(p.returncode != 0 and "metrics.jsonl" in p.stdout + p.stderr,
              f"a run dir without metrics.jsonl is an error naming it (rc {p.returncode})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("claims_plot_test")


if __name__ == "__main__":
    main()
