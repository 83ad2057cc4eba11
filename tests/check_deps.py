#!/usr/bin/env python3
"""Fails when a file under src/ includes a header of a higher layer (dependency direction,
docs/ARCHITECTURE.md). The layer order is encoded once, in CMakeLists.txt: each folder src/X is
the library olmo_X declared by `olmo_library(olmo_X X deps...)`, a library links only libraries
declared before it, and src/X may include "Y/..." only when Y == X or olmo_Y is among the
libraries olmo_X links, directly or through them (so core, linking no olmo_ library, includes
only core; kernels only kernels and core; train anything below it).
Also fails for a folder of src/ without its olmo_library, a link to a library declared later
(a cycle in the making) or to an unknown olmo_ library. Each violation is named with file:line.
Before the real tree it checks itself on a planted back-arrow (core including kernels): a
checker that misses it fails.
Usage: check_deps.py SOURCE_DIR   (exit 0: every include follows the layers; 1: not, each named)
Registered as the ctest test meta_deps. Standard library only.
"""
import os
import re
import sys
import tempfile

LIB = re.compile(r'^\s*olmo_library\(\s*olmo_(\w+)\s+(\w+)([^)]*)\)', re.M)
LINK = re.compile(r'^\s*target_link_libraries\(\s*olmo_(\w+)\s+([^)]*)\)', re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"')


def layers(cmake_text):
    """({folder: set of folders it may include}, [problems]) from CMakeLists.txt."""
    text = re.sub(r'#[^\n]*', '', cmake_text)
    declared = {m.group(1) for m in LIB.finditer(text)}
    order, direct, problems = [], {}, []
    for m in LIB.finditer(text):
        name, folder = m.group(1), m.group(2)
        if name != folder:
            problems.append(f"CMakeLists.txt: olmo_{name} is built from src/{folder}; "
                            f"the rule needs library olmo_X for folder src/X")
        deps = re.findall(r'\bolmo_(\w+)', m.group(3))
        for d in deps:
            if d not in direct:
                problems.append(f"CMakeLists.txt: olmo_{name} links olmo_{d}, which is "
                                f"{'declared after it' if d in declared else 'no olmo_library'}"
                                f" (a library links only those declared before it)")
        order.append(folder)
        direct[folder] = set(d for d in deps if d in direct)
    for m in LINK.finditer(text):
        name = m.group(1)
        for d in re.findall(r'\bolmo_(\w+)', m.group(2)):
            if name in direct and d in direct and order.index(d) < order.index(name):
                direct[name].add(d)
            elif name in direct:
                problems.append(f"CMakeLists.txt: target_link_libraries(olmo_{name} ... olmo_{d}):"
                                f" olmo_{d} is not a library declared before olmo_{name}")
    allowed = {}
    for f in order:  # declaration order: every dependency is already closed
        s = {f}
        for d in direct[f]:
            s |= allowed[d]
        allowed[f] = s
    return allowed, problems


def check(src_root):
    """Violations (strings) of the tree at src_root (its CMakeLists.txt and src/)."""
    with open(os.path.join(src_root, "CMakeLists.txt")) as f:
        allowed, problems = layers(f.read())
    src = os.path.join(src_root, "src")
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for d in folders:
        if d not in allowed:
            problems.append(f"src/{d}: no olmo_library(olmo_{d} {d} ...) in CMakeLists.txt, "
                            f"so its layer is unknown")
    for d in folders:
        if d not in allowed:
            continue
        for dirpath, _, files in os.walk(os.path.join(src, d)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp", ".hpp", ".cc", ".inc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, src_root)
                with open(path, errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in folders or m.group(1) in allowed[d]:
                            continue
                        problems.append(f"{rel}:{n}: includes {m.group(1)}/ but src/{d} "
                                        f"(olmo_{d}) does not link olmo_{m.group(1)}: a lower layer "
                                        f"reaching up, or a dependency the link order lacks")
    return problems


def self_test():
    """The checker on a tiny tree with one planted back-arrow: it must name exactly that one."""
    with tempfile.TemporaryDirectory() as t:
        with open(os.path.join(t, "CMakeLists.txt"), "w") as f:
            f.write("olmo_library(olmo_core core Ext::lib)\n"
                    "olmo_library(olmo_kernels kernels olmo_core DNNL::dnnl)\n"
                    "olmo_library(olmo_model model olmo_kernels)\n")
        files = {"core/a.h": '#include "core/b.h"\n', "core/b.cpp": '#include "kernels/k.h"\n',
                 "kernels/k.h": '#include "core/a.h"\n', "model/m.cpp": '#include "core/a.h"\n'}
        for rel, body in files.items():
            os.makedirs(os.path.join(t, "src", os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(t, "src", rel), "w") as f:
                f.write(body)
        got = check(t)
        if len(got) != 1 or not got[0].startswith("src/core/b.cpp:1: includes kernels/"):
            print("check_deps self-test FAILED: planted core -> kernels arrow, got:", got)
            return False
    return True


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not self_test():
        return 1
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"meta_deps: {len(problems)} include(s)/link(s) against the layer order "
              f"(CMakeLists.txt olmo_library order; docs/ARCHITECTURE.md)")
        return 1
    with open(os.path.join(sys.argv[1], "CMakeLists.txt")) as f:
        allowed, _ = layers(f.read())
    print("meta_deps: every #include under src/ follows the layers: " +
          "; ".join(f"{d} -> {', '.join(sorted(allowed[d] - {d})) or '(nothing)'}"
                    for d in allowed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
