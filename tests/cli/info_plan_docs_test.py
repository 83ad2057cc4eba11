"""docs/training.md's "What you can train" table is `olmo info --plan`'s output (issue 48): the
page holds the command's whole output verbatim (regenerate: build/olmo info --plan, pasted under
that heading). Also: the table has the 16 rows (4 presets x 4 machines), and changing an
assumption changes the figures (--mfu 0.5 gives another table). Seen red: editing one figure of
the page fails it. Env: OLMO_BIN, OLMO_SOURCE_DIR. < 1 s.
"""
import os

from olmo_test import SRC, check, finish, olmo


def main():
    out = olmo("info", "--plan").stdout
    rows = [l for l in out.splitlines() if l.startswith("| olmo3-")]
    check(len(rows) == 16, "olmo info --plan prints 16 rows (4 presets x 4 machines)", len(rows))
    page = open(os.path.join(SRC, "docs", "training.md"), encoding="utf-8").read()
    check(out.strip() and out.strip() in page,
          "docs/training.md holds olmo info --plan's output verbatim",
          "regenerate: build/olmo info --plan, paste it under 'What you can train'")
    other = olmo("info", "--plan", "--mfu", "0.5").stdout
    check(other != out and "MFU 50.0%" in other, "--mfu 0.5 changes the table and is printed")
    finish("info_plan_docs")


if __name__ == "__main__":
    main()
