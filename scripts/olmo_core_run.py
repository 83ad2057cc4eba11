"""OLMo-core's own Trainer as the reference run of an olmo.cpp config (issue 19).

usage: olmo_core_run.py CONFIG.yaml [key=value ...] --run-dir DIR
                        [--init-hf HF_DIR] [--nudge-ulp | --nudge-ulp-mixed] [--clip-f64]
                        [--threads N] [--noise-floor [--held-out-twin]]

Resolves CONFIG (+ overrides) exactly as `olmo train` does (its --dry-run), refuses any field
OLMo-core cannot express (naming it; scripts/olmo_core_common.py), then trains with OLMo-core
3.0.0's Trainer + TransformerTrainModule (SkipStepAdamW, embedding weight decay through a group
override, the scheduler, z-loss, clipping) on NumpyFSLDataset/NumpyFSLDataLoader over the same
uint32 token files and seed, in one CPU process (no process group, no compile, fp32). DIR gets:
  config.yaml       the olmo.cpp config it mirrors (trainer.run_dir = DIR)
  metrics.jsonl     our schema (src/monitor/callbacks.cpp): {"kind":"train"} per step with loss
                    (CE), z_loss (scaled), grad_norm (pre-clip), lr, skipped, instances (the
                    global instance indices of the batch), tokens_digest (see below), step_s;
                    {"kind":"eval"} per eval set at start / eval.interval / end; info records
  validation.jsonl  our schema (src/monitor/validation.h) at validation.interval and the last step
  init_hf/          the step-0 weights as an HF dir (HF names as `olmo export`), so
                    `olmo train CONFIG trainer.init_from_hf=DIR/init_hf` starts from them
  stepN/            OLMo-core's own checkpoints (save_interval, and the last step)
  reference.json    what produced it (framework versions, threads, nudge, init, any
                    OLMO_TEST_PARAM_SCALE deviation: scripts/ref_faults.py)
tokens_digest: sum over the batch's token ids t at flat position i of (t+1)*(2i+1) mod 2^64
(decimal string), so `olmo compare` can check the tokens of a step, not only their indices.
--init-hf starts from those weights instead of OLMo-core's init; --nudge-ulp moves every initial
weight up by one ulp (--nudge-ulp-mixed: up or down by a seeded coin per element); --clip-f64
clips with a float64 norm instead of torch's fp32 one (numerics-only perturbations of the noise
floor); --noise-floor runs both twins (DIR/noise_twin, DIR/clip_twin) as processes alongside this
one and writes DIR/noise_floor.json (scripts/noise_floor.py); --held-out-twin also runs
DIR/held_twin (--nudge-ulp-mixed), which does not enter the floor: compared as a run it tests the
floor on a sample of OLMo-core's own noise that did not set it. trainer.load_path may name a reference run dir (its
newest stepN) or an OLMo-core checkpoint: stage 2 (load_trainer_state false, optimizer state
carried) as OLMo-core's own scripts do.
Cost: OLMo-core's eager fp32 step plus, at each validation / eval point, one forward per batch.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from olmo_core_common import (RefError, build_model_config, check_expressible, die,  # noqa: E402
                              load_hf_into, mix_paths, resolve_config, use_float64_clip_norm)


def latest_checkpoint(path):
    """path: an OLMo-core checkpoint (stepN with model_and_optim/) or a dir holding stepN dirs."""
    if os.path.isdir(os.path.join(path, "model_and_optim")):
        return path
    if not os.path.isdir(path):
        raise RefError(f"trainer.load_path: not found: {path}")
    steps = [int(d[4:]) for d in os.listdir(path) if d.startswith("step") and d[4:].isdigit()
             and os.path.isdir(os.path.join(path, d, "model_and_optim"))]
    if not steps:
        raise RefError(f"trainer.load_path: {path} holds no OLMo-core checkpoint (stepN/)")
    return os.path.join(path, f"step{max(steps)}")


def scheduler(cfg):
    from olmo_core.optim import (WSD, ConstantScheduler, ConstantWithWarmup, CosWithWarmup,
                                 LinearWithWarmup)
    from olmo_core.optim.scheduler import HalfCosWithWarmup
    s = cfg["scheduler"]
    name, w, a, wm = s["name"], int(s["warmup_steps"]), float(s["alpha_f"]), float(s["warmup_min_lr"])
    if name == "constant":
        return ConstantScheduler()
    if name == "constant_with_warmup":
        return ConstantWithWarmup(warmup=w, warmup_min_lr=wm)
    if name == "wsd":
        d = int(s.get("decay_steps") or 0)
        return WSD(warmup=w, warmup_min_lr=wm, **({"decay": d, "decay_fraction": None} if d else {}))
    cls = {"cos_with_warmup": CosWithWarmup, "half_cos_with_warmup": HalfCosWithWarmup,
           "linear_with_warmup": LinearWithWarmup}[name]
    return cls(warmup=w, alpha_f=a, warmup_min_lr=wm)


def durations(cfg):
    """(steps this run executes, schedule t_max) as train::run_steps / schedule_steps."""
    t, G = cfg["trainer"], int(cfg["data"]["global_batch_tokens"])
    t_max = int(t["max_steps"]) or math.ceil(float(t["max_tokens"] or 0) / G)
    hard = int(t["hard_stop_steps"] or 0)
    return (min(t_max, hard) if hard else t_max), t_max


def build(cfg, run_dir, threads, callbacks, init_hf="", load_path=None):
    """OLMo-core's Trainer (one CPU process, no process group) for a resolved olmo.cpp config:
    returns (trainer, train_module). Checkpoints go to run_dir/stepN (save_interval and the
    end); a checkpoint already in run_dir is resumed by trainer.fit(), else load_path (a stage)."""
    import logging

    import torch
    torch.set_num_threads(threads)
    logging.disable(logging.WARNING)
    from olmo_core.data import (NumpyDataLoaderConfig, NumpyDatasetDType, NumpyFSLDatasetConfig,
                                TokenizerConfig)
    from olmo_core.optim import OptimGroupOverride, SkipStepAdamWConfig
    from olmo_core.train import Duration, TrainerConfig, prepare_training_environment
    from olmo_core.train.callbacks import CheckpointerCallback
    from olmo_core.train.train_module import TransformerTrainModuleConfig

    d, m, o, t = cfg["data"], cfg["model"], cfg["optim"], cfg["trainer"]
    prepare_training_environment(seed=int(t["init_seed"]), backend=None)
    work = os.path.join(run_dir, "work")
    T, G = int(d["seq_len"]), int(d["global_batch_tokens"])
    tok = TokenizerConfig(vocab_size=int(m["vocab_size"]), eos_token_id=int(d["eos_id"]),
                          pad_token_id=int(d["pad_id"]))
    ds = NumpyFSLDatasetConfig(paths=mix_paths(d["mix"]), sequence_length=T, tokenizer=tok,
                               dtype=NumpyDatasetDType.uint32, work_dir=work).build()
    ds.prepare()
    loader = NumpyDataLoaderConfig(global_batch_size=G, seed=int(d["seed"]), num_workers=0,
                                   work_dir=work).build(ds)
    model = build_model_config(cfg).build(init_device="cpu")
    model.init_seed = int(t["init_seed"])
    optim = SkipStepAdamWConfig(
        lr=float(o["lr"]), betas=tuple(float(b) for b in o["betas"]), eps=float(o["eps"]),
        weight_decay=float(o["weight_decay"]),
        rolling_interval_length=int(o["rolling_interval_length"]),
        sigma_factor=float(o["sigma_factor"]),
        group_overrides=[OptimGroupOverride(params=["embeddings.weight"],
                                            opts=dict(weight_decay=float(o["embedding_weight_decay"])))])
    mgn = float(o["max_grad_norm"])
    tm = TransformerTrainModuleConfig(
        rank_microbatch_size=int(d["micro_batch_tokens"]), max_sequence_length=T, optim=optim,
        scheduler=scheduler(cfg), z_loss_multiplier=float(t["z_loss_multiplier"]) or None,
        max_grad_norm=mgn if mgn > 0 else None, compile_model=False).build(model, device=torch.device("cpu"))
    if init_hf and not load_path:
        load_hf_into(tm.model, init_hf)
    total, t_max = durations(cfg)
    max_steps = int(t["max_steps"])
    duration = Duration.steps(max_steps) if max_steps else Duration.tokens(int(float(t["max_tokens"])))
    save = int(t["save_interval"] or 0)
    tc = TrainerConfig(
        save_folder=run_dir, work_dir=work, max_duration=duration, metrics_collect_interval=1,
        hard_stop=Duration.steps(total) if total < t_max else None, save_overwrite=True,
        load_path=load_path, load_trainer_state=bool(t["load_trainer_state"]) if load_path else None,
        load_optim_state=bool(t["load_optim_state"]) if load_path else None,
        callbacks={"checkpointer": CheckpointerCallback(save_interval=save if save > 0 else None,
                                                        pre_train_checkpoint=False, save_async=False),
                   **callbacks})
    return tc.build(tm, loader), tm


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("overrides", nargs="*")
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--init-hf", default="")
    nudge = ap.add_mutually_exclusive_group()
    nudge.add_argument("--nudge-ulp", action="store_true", help="every initial weight up 1 ulp")
    nudge.add_argument("--nudge-ulp-mixed", action="store_true",
                       help="every initial weight up or down 1 ulp (a seeded coin per element)")
    ap.add_argument("--clip-f64", action="store_true",
                    help="clip with a float64 gradient norm (torch's get_total_norm is fp32)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--noise-floor", action="store_true",
                    help="also run the twins (DIR/noise_twin: 1 ulp nudge, DIR/clip_twin: "
                         "float64 clip norm) and write DIR/noise_floor.json")
    ap.add_argument("--held-out-twin", action="store_true",
                    help="with --noise-floor: also run DIR/held_twin (1 ulp mixed nudge), left "
                         "out of the floor")
    args = ap.parse_args()
    if args.held_out_twin and not args.noise_floor:
        ap.error("--held-out-twin needs --noise-floor")
    run_dir = os.path.abspath(args.run_dir)
    cfg, text = resolve_config(args.config, [*args.overrides, f"trainer.run_dir={run_dir}"])
    check_expressible(cfg)
    t = cfg["trainer"]
    if os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
        raise RefError(f"{run_dir} already holds a run (metrics.jsonl): use a new --run-dir")
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "config.yaml"), "w") as f:
        f.write(text)

    import torch

    import noise_floor
    if args.clip_f64:
        use_float64_clip_norm()
    import ref_faults
    import ref_metrics
    threads = args.threads or int(t.get("threads") or 0) or int(os.environ.get("OMP_NUM_THREADS", "1"))
    total, t_max = durations(cfg)
    nudge = "up" if args.nudge_ulp else "mixed" if args.nudge_ulp_mixed else None
    recorder = ref_metrics.Recorder(cfg, run_dir, total, nudge=nudge)
    callbacks = {"olmo_cpp_recorder": recorder}
    scale = ref_faults.param_scale(cfg, list(dict.fromkeys(ref_metrics.PARAM_GROUPS.values())),
                                   ref_metrics.param_group)
    if scale:
        callbacks["olmo_cpp_param_scale"] = scale
    init_hf = args.init_hf or t.get("init_from_hf") or ""
    load_path = latest_checkpoint(t["load_path"]) if t.get("load_path") else None
    trainer, tm = build(cfg, run_dir, threads, callbacks, init_hf, load_path)
    from importlib.metadata import version
    with open(os.path.join(run_dir, "reference.json"), "w") as f:
        json.dump({"framework": "olmo-core", "olmo_core_version": version("ai2-olmo-core"),
                   "torch_version": torch.__version__, "threads": threads,
                   "nudge_ulp": nudge or False,
                   "param_scale": os.environ.get(ref_faults.ENV) if scale else None,
                   "clip_norm": "float64" if args.clip_f64 else "torch get_total_norm (fp32)",
                   "init_hf": init_hf, "load_path": load_path,
                   "t_max": t_max, "total_steps": total, "started": time.time()}, f, indent=1)
    twin = []
    if args.noise_floor:  # the twin runs alongside, from the start this run writes
        recorder.on_init_hf = lambda: twin.extend(noise_floor.start_twins(args, run_dir, load_path))
    recorder.start(tm.model, trainer.global_step)
    try:
        trainer.fit()
    except BaseException:
        for _, proc in twin:
            proc.kill()
        raise
    recorder.finish()
    print(f"olmo_core_run: {recorder.last_step} steps; reference run in {run_dir}")
    if twin:
        noise_floor.finish_twins(run_dir, twin)


if __name__ == "__main__":
    try:
        main()
    except RefError as e:
        die(e)
