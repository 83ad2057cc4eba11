"""README "Commands": `olmo data mix NAME --root DIR [--census]` gives "an OLMo-core mix by
name: its token files as DataMix.build gives them (and how many are on disk)": the census part
end to end (tests/data/named_mix_test.py holds the lists against DataMix.build).

OLMoE-mix-0824-dev (4 files) under a temporary root: the paths come from OLMo-core's own
DataMix("OLMoE-mix-0824-dev").build(root, "allenai/dolma2-tokenizer"); files 2 and 4 are
written with 1,000 and 3,000 uint32 tokens. `--census` must print the same paths and
"present 2 of 4 files, 4000 tokens, first missing <path 1>"; with all four present (2,000 more
tokens) "present 4 of 4 files, 8000 tokens" and no missing path. Without --census no census line.
Seen red: an OLMO_BIN shim that alters the printed token count (sed) fails both census checks;
the expected count is the files' size / 4, read here with os.path.getsize.
Cost: < 2 s.
"""
import logging
import os
import re
import shutil
import tempfile

import numpy as np

import olmo_test as ot
from olmo_test import check, finish

logging.disable(logging.WARNING)
NAME, TOK = "OLMoE-mix-0824-dev", "allenai/dolma2-tokenizer"


def census_line(out):
    return next((x for x in out.splitlines() if x.startswith("present ")), None)


def main():
    from olmo_core.data import DataMix
    root = tempfile.mkdtemp(prefix="olmo_mix_census_")
    try:
        paths, labels = DataMix(NAME).build(root, TOK)
        check(len(paths) == 4, f"OLMo-core's {NAME}: {len(paths)} files")
        sizes = {1: 1000, 3: 3000, 0: 2000, 2: 2000}
        for i in (1, 3):
            os.makedirs(os.path.dirname(paths[i]), exist_ok=True)
            np.arange(sizes[i], dtype="<u4").tofile(paths[i])
        out = ot.olmo("data", "mix", NAME, "--root", root, "--census").stdout
        listed = [x.split(",", 1)[1] for x in out.splitlines() if "," in x and not x.startswith("present")]
        check(listed == list(paths), "the paths are DataMix.build's")
        have = sum(os.path.getsize(p) // 4 for p in paths if os.path.exists(p))
        want = f"present 2 of 4 files, {have} tokens, first missing {paths[0]}"
        check(census_line(out) == want and have == 4000, f"census {census_line(out)!r} == {want!r}")
        for i in (0, 2):
            os.makedirs(os.path.dirname(paths[i]), exist_ok=True)
            np.arange(sizes[i], dtype="<u4").tofile(paths[i])
        out = ot.olmo("data", "mix", NAME, "--root", root, "--census").stdout
        line = census_line(out) or ""
        check(re.fullmatch(r"present 4 of 4 files, 8000 tokens\.?", line) is not None,
              f"all present: {line!r}")
        out = ot.olmo("data", "mix", NAME, "--root", root).stdout
        check(census_line(out) is None, "no census line without --census")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    finish("claims_mix_census_test")


if __name__ == "__main__":
    main()
