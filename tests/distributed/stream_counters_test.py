"""The streamed path (dist.overlap) and the row-sparse embedding path engage where they are on,
read from their counters in metrics.jsonl (issue 45, item 6; dist::GradReducer::streamed_units /
skipped_rows, rank 0's figures per step), not only from equal bits:
  - 2 processes, exact, overlap on: streamed_units > 0 at every step (the last micro-batch's units
    went on the wire during its backward), embed_rows_skipped > 0 (rows no micro-batch or no rank
    touched were left out);
  - the same with overlap off: streamed_units 0 at every step, and the same final bits;
  - 2 processes, fast mode, overlap on: streamed_units > 0;
  - 1 process, exact, 12 micro-batches: streamed_units 0 (nothing to stream to),
    embed_rows_skipped > 0 (the middle micro-batches convert only their rows);
  - 1 process, one instance per step: embed_rows_skipped 0 (the only micro-batch is stored and
    rounded whole: the sparse path cannot engage).
The pieces themselves (travel, the touched-row union, a streamed step) are unit-tested in
grad_stream_test.cpp.
"""
import os
import shutil
import tempfile

import dist_util as du
import olmo_test as ot
from olmo_test import check, finish
from olmo_test import tiny_data as td

STEPS = 3


def counters(run):
    recs = ot.read_metrics(run)
    return ([r["streamed_units"] for r in recs], [r["embed_rows_skipped"] for r in recs])


def main():
    tmp = tempfile.mkdtemp(prefix="olmo_dist_counters_")
    try:
        data = td.make_data(os.path.join(tmp, "data"), train_tokens=64 * 12 * (STEPS + 1))

        def run(name, np_, extra):
            d = os.path.join(tmp, name)
            du.train(np_, du.base_overrides(data, d, steps=STEPS, extra=extra))
            return d, counters(d)

        on, (su, sk) = run("overlap", 2, ["dist.overlap=true"])
        check(len(su) == STEPS and all(x > 0 for x in su),
              "2 processes, exact, overlap on: streamed_units > 0 at every step", su)
        check(all(x > 0 for x in sk), "2 processes, exact: embed_rows_skipped > 0", sk)
        off, (su, sk) = run("no_overlap", 2, ["dist.overlap=false"])
        check(len(su) == STEPS and all(x == 0 for x in su),
              "2 processes, exact, overlap off: streamed_units 0 at every step", su)
        check(du.bitwise_equal(du.tensors(du.final_dir(on)), du.tensors(du.final_dir(off))),
              "overlap on and off: the same final bits")
        _, (su, _) = run("fast", 2, ["dist.overlap=true", "dist.reduce=fast"])
        check(len(su) == STEPS and all(x > 0 for x in su),
              "2 processes, fast, overlap on: streamed_units > 0 at every step", su)
        _, (su, sk) = run("one", 1, [])
        check(su == [0] * STEPS, "1 process: streamed_units 0", su)
        check(len(sk) == STEPS and all(x > 0 for x in sk),
              "1 process, 12 micro-batches: embed_rows_skipped > 0 at every step", sk)
        _, (su, sk) = run("one_instance", 1, ["data.global_batch_tokens=64"])
        check(sk == [0] * STEPS, "1 process, one instance per step: embed_rows_skipped 0", sk)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("dist_stream_counters")


if __name__ == "__main__":
    main()
