"""Issue 23 item 4: OLMo-core's data mixes by name (src/data/named_mix.h, train/training_data.h).

Independent reference: OLMo-core 3.0.0 itself (olmo_core.data.mixes.DataMix.build) in the
project venv.
  * the vendored lists (configs/mixes/olmo-core-3.0.0) are byte-identical to the installed
    package's olmo_core/data/mixes/*.txt, and `olmo data mix --list` names exactly DataMix's
    members;
  * `olmo data mix NAME --root R --tokenizer T` gives DataMix(NAME).build(R, T) line for line
    (labels and paths, {TOKENIZER} substitution) for every mix and alias and four tokenizers;
  * `olmo train configs/olmo3-7b-stage{1,2,3}*.yaml --dry-run data.root=FAKE` on a fake root
    holding 3 files of the mix says "3 of N files present", their tokens and the first missing
    path (N = 1,016 / 11,933 / 998: the longmino list has 1,000 lines, 2 of them comments);
  * a tiny run trains on a named mix whose 4 files are all present (OLMoE-mix-0824-dev) and its
    offline audit is clean;
  * bad input: an unknown mix name (error lists the known ones, in training and in the dry run),
    a root without the files (count and first missing path, no run dir left), a named mix
    without data.root, a mix list line without {TOKENIZER} (file and line named).
"""
import filecmp
import glob
import os
import subprocess
import tempfile

import numpy as np

import olmo_test as ot
from olmo_test import check, finish
from olmo_test import olmo
from olmo_test.tiny_data import stream, tiny_config

from olmo_core.data.mixes import DataMix
from olmo_core.data.tokenizer import TokenizerName

SRC = os.environ.get("OLMO_SOURCE_DIR", ".")
VENDORED = os.path.join(SRC, "configs", "mixes", "olmo-core-3.0.0")


def main():
    import olmo_core.data.mixes as m
    pkg = os.path.dirname(m.__file__)
    shipped = sorted(os.path.basename(p) for p in glob.glob(os.path.join(pkg, "*.txt")))
    ours = sorted(os.path.basename(p) for p in glob.glob(os.path.join(VENDORED, "*.txt")))
    check(shipped == ours, f"vendored lists = the package's ({len(ours)} files)")
    same = [f for f in shipped if filecmp.cmp(os.path.join(pkg, f), os.path.join(VENDORED, f),
                                              shallow=False)]
    check(same == shipped, f"vendored lists byte-identical ({len(same)} of {len(shipped)})")
    listed = olmo("data", "mix", "--list").stdout.split()
    check(sorted(listed) == sorted(x.value for x in DataMix), "olmo data mix --list = DataMix")

    # Every mix (and alias) x tokenizer against DataMix.build.
    names = [x.value for x in DataMix] + ["dolma3-0625-6T-mix", "dolma3-0925-6T-mix",
                                          "dolma3-0925-150B-mix"]
    toks = [TokenizerName.dolma2, TokenizerName.dolma2_sigdig,
            TokenizerName.gpt_neox_olmo_dolma_v1_5, TokenizerName.gpt2]
    bad = []
    for name in names:
        for tok in toks:
            paths, labels = DataMix(name).build("/r/oot", str(tok))
            want = [f"{lab},{p}" for lab, p in zip(labels, paths)]
            got = olmo("data", "mix", name, "--root", "/r/oot", "--tokenizer", str(tok)).stdout
            if got.splitlines() != want:
                bad.append((name, str(tok)))
    check(bad == [], f"{len(names)} mixes x {len(toks)} tokenizers = DataMix.build ({bad[:3]})")

    with tempfile.TemporaryDirectory(prefix="olmo_named_mix_") as root:
        # Dry runs of the three OLMo 3 stages on a fake root with 3 files of each mix.
        for cfg, name, n in (("olmo3-7b-stage1.yaml", "OLMo-mix-0625-official", 1016),
                             ("olmo3-7b-stage2-midtrain.yaml", "OLMo-midtraining-mix-0625-100B",
                              11933),
                             ("olmo3-7b-stage3-long-context.yaml", "OLMo-longmino-mix-0625",
                              998)):
            fake = os.path.join(root, "fake_" + name)
            paths, _ = DataMix(name).build(fake, TokenizerName.dolma2)
            check(len(paths) == n, f"{name}: {len(paths)} files in OLMo-core's list")
            sizes = {0: 1000, 2: 2000, 5: 3000}
            for i, k in sizes.items():
                os.makedirs(os.path.dirname(paths[i]), exist_ok=True)
                np.arange(k, dtype=np.uint32).tofile(paths[i])
            p = olmo("train", os.path.join(SRC, "configs", cfg), "--dry-run", f"data.root={fake}")
            want = (f"3 of {n:,} files present, 6,000 tokens; first missing: {paths[1]}")
            check(want in p.stdout, f"{cfg} --dry-run data.root=FAKE: '{want}'"
                  + ("" if want in p.stdout else f"\n{p.stdout[-1500:]}"))
        p = olmo("train", os.path.join(SRC, "configs", "olmo3-7b-stage1.yaml"), "--dry-run",
                 "data.mix=OLMo-mix-0625-offcial")
        check("unknown data mix 'OLMo-mix-0625-offcial'" in p.stdout
              and "OLMo-mix-0625-official" in p.stdout, "dry run: unknown mix listed")

        # A run on a named mix whose files are all present; then its audit.
        dev = os.path.join(root, "dev")
        paths, _ = DataMix("OLMoE-mix-0824-dev").build(dev, TokenizerName.dolma2)
        for i, p in enumerate(paths):
            os.makedirs(os.path.dirname(p), exist_ok=True)
            stream(64 * 8 * 5, 10 + i).tofile(p)
        p = olmo("data", "info", "--mix", "OLMoE-mix-0824-dev", "--data-root", dev, "--seq-len",
                 "64", "--vocab", "512", "--eos", "0", "--pad", "1")
        check("files 4\ninstances 160\n" in p.stdout, "olmo data info --mix NAME: 4 files, 160 "
              "instances")
        run = os.path.join(root, "run_dev")
        p = olmo("train", tiny_config(), "data.mix=OLMoE-mix-0824-dev", f"data.root={dev}",
                 f"trainer.run_dir={run}", "trainer.max_steps=3", "trainer.threads=1")
        check("done at step 3" in p.stdout, "tiny run on OLMoE-mix-0824-dev (4 files) trains")
        a = olmo("audit", run, check=False)
        check(a.returncode == 0 and f"{4 * 5 * 8} fsl instances" in a.stdout,
              "its offline audit is clean over the 4 files' 160 instances")

        # Bad input.
        run = os.path.join(root, "run_bad")
        p = olmo("train", tiny_config(), "data.mix=OLMo-mix-9999", f"trainer.run_dir={run}",
                 check=False)
        check(p.returncode != 0 and "unknown data mix 'OLMo-mix-9999'" in p.stderr
              and "OLMo-longmino-mix-0625" in p.stderr and "dolma3-0625-6T-mix" in p.stderr,
              "unknown mix: error lists the known ones")
        fake = os.path.join(root, "fake_OLMo-mix-0625-official")
        paths, _ = DataMix("OLMo-mix-0625-official").build(fake, TokenizerName.dolma2)
        p = olmo("train", tiny_config(), "data.mix=OLMo-mix-0625-official", f"data.root={fake}",
                 f"trainer.run_dir={run}", check=False)
        check(p.returncode != 0 and "3 of 1016 token files present" in p.stderr
              and f"first missing: {paths[1]}" in p.stderr and not os.path.exists(run),
              "missing files: count and first missing path, no run dir")
        p = olmo("train", tiny_config(), "data.mix=OLMo-mix-0625-official",
                 f"trainer.run_dir={run}", check=False)
        check(p.returncode != 0 and "set data.root" in p.stderr, "named mix without data.root")
        mixes = os.path.join(root, "mixes")
        os.makedirs(mixes)
        with open(os.path.join(mixes, "broken.txt"), "w") as f:
            f.write("# comment\na,x/{TOKENIZER}/0.npy\nb,x/y/1.npy\n")
        env = dict(os.environ, OLMO_MIXES_DIR=mixes)
        p = subprocess.run([ot.bin_path(), "data", "mix", "broken",
                            "--root", "/r"], capture_output=True, text=True, env=env)
        check(p.returncode != 0 and "broken.txt:3" in p.stderr and "{TOKENIZER}" in p.stderr,
              "a line without {TOKENIZER}: file and line named")
    finish("named mix test")


if __name__ == "__main__":
    main()
