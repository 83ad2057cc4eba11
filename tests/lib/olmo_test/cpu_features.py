"""olmo_test.cpu_features: what this CPU runs, for tests with a CPU-dependent part: read from
/proc/cpuinfo as tests/check_skips.py reads it (independent of src/core/cpu.cpp), and the line
that announces a part a test cannot run here.

ISA levels (src/core/cpu.cpp): scalar always; avx2 with avx2 + fma; avx512 with
avx512f/bw/vl/dq. OLMO_ISA in the environment caps them, as the binary clamps it. Native bf16
(src/kernels/bf16.cpp, cpu_has_bf16): avx512_bf16 at the avx512 level, unless OLMO_BF16=0.
A test runs every level / path this CPU has (forcing the lower ones: OLMO_ISA=avx2|scalar,
OLMO_BF16=emulate) and announces each one it lacks with not_run():
  NOT RUN here: WHAT (this CPU lacks AVX-512)
tests/check_skips.py lists the line under the passed test and fails the run where the named
feature is present after all. Standard library only.
"""
import os

ISAS = ["scalar", "avx2", "avx512"]
FEATURE = {"avx2": "AVX2", "avx512": "AVX-512"}  # the names check_skips.py matches
# oneDNN picks its own ISA (OLMO_ISA does not reach it): ONEDNN_MAX_CPU_ISA as on a CPU whose
# best level is this one (tests/kernels/gemm_isa.cmake checks that the cap takes effect).
ONEDNN_CAP = {"scalar": "SSE41", "avx2": "AVX2"}


def flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_isa():
    """The CPU's best level, whatever OLMO_ISA says."""
    f = flags()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= f:
        return "avx512"
    return "avx2" if {"avx2", "fma"} <= f else "scalar"


def isa():
    """The level the binary runs at when a test sets no OLMO_ISA: the CPU's, capped by
    OLMO_ISA."""
    env = os.environ.get("OLMO_ISA")
    return lower(env, cpu_isa()) if env in ISAS else cpu_isa()


def lower(a, b):
    return min(a, b, key=ISAS.index)


def isas():
    """scalar .. isa(): the levels a test runs here."""
    return ISAS[:ISAS.index(isa()) + 1]


def lacks(level):
    """Why LEVEL does not run here, naming the feature as check_skips.py matches it."""
    if ISAS.index(cpu_isa()) < ISAS.index(level):
        return f"this CPU lacks {FEATURE[level]}"
    return f"OLMO_ISA={os.environ.get('OLMO_ISA')} turns {FEATURE[level]} off"


def native_bf16():
    """True where the binary runs bf16_mixed on the native AVX512_BF16 kernels."""
    return (isa() == "avx512" and "avx512_bf16" in flags()
            and os.environ.get("OLMO_BF16") not in ("0", "emulate"))


def lacks_bf16():
    if cpu_isa() != "avx512" or "avx512_bf16" not in flags():
        return "this CPU lacks AVX512_BF16"
    return "AVX512_BF16 turned off by OLMO_ISA / OLMO_BF16"


def emulated_bf16_env():
    """The environment of bf16_mixed's path on a CPU without native bf16, on any CPU: the
    emulated GEMMs (OLMO_BF16=emulate) under the AVX2 kernels (the scalar ones below AVX2)."""
    return {"OLMO_BF16": "emulate", "OLMO_ISA": lower("avx2", isa())}


def not_run(what, why):
    """Announces a part not run here; WHY names the missing feature (lacks(), lacks_bf16())."""
    print(f"NOT RUN here: {what} ({why})", flush=True)
