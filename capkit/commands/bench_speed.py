"""`capkit bench-speed`: capkit against pycocoevalcap 1.2 on one system, in one run."""
from __future__ import annotations

import argparse
import json

from capkit.commands.args import integer
from capkit.report import format_table


def register(sub) -> None:
    p = sub.add_parser("bench-speed", help="time capkit against pycocoevalcap 1.2")
    p.add_argument("--dataset", default="coco_karpathy_test")
    p.add_argument("--system", default="updown_paddle")
    p.add_argument("--repeat", type=integer(1), default=3,
                   help="timed runs of each side; the median is reported (default 3)")
    p.add_argument("--meteor", action="store_true",
                   help="also time METEOR from a cold start (pycocoevalcap: JVM start and "
                        "paraphrase table; capkit: its resources reloaded); ~15 s a repeat")
    p.add_argument("--whole-process", action="store_true",
                   help="also time whole processes (start-up, imports, file reading included): "
                        "`capkit score` vs a pycocoevalcap script, BLEU-4 + ROUGE-L + CIDEr-D")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="also write the results as a JSON record (the command, machine, "
                        "versions, date and every number printed), e.g. "
                        "docs/measurements/bench_speed.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from capkit.data import load
    from capkit.speed import bench_speed

    if args.record:
        from capkit.commands.args import output_file
        output_file(args.record, "--record")       # checked before the minutes of timing
    corpus = load(args.dataset)
    if args.system not in corpus.systems:
        raise ValueError(f"no system {args.system!r} in {args.dataset}; "
                         f"choose one of {', '.join(corpus.systems)}")
    cands = corpus.systems[args.system]
    refs = {image: corpus.references[image] for image in cands}
    result = bench_speed(cands, refs, repeat=args.repeat, meteor=args.meteor)
    print(f"{args.dataset} / {args.system}: {result['n_captions']} captions, "
          f"{result['n_references']} references; median of {args.repeat} runs, tokenisation "
          "included on both sides (pycocoevalcap: Java PTB tokenizer, two JVM starts)")
    rows = [[step, ref, cap, f"{ratio:.1f}x"] for step, ref, cap, ratio in result["rows"]]
    print(format_table(["step", "pycocoevalcap s", "capkit s", "speed-up"], rows, digits=3))
    print(f"largest corpus-score difference (BLEU-4, ROUGE-L, CIDEr-D): "
          f"{result['max_corpus_diff']:.2e}")
    if "meteor_corpus_diff" in result:
        diff = result["meteor_corpus_diff"]
        print("meteor: cold start on both sides (JVM + paraphrase table / capkit's resources "
              f"from its binary cache); corpus-score difference {diff:.2e}")
    whole = _whole_process(cands, refs, args.repeat) if args.whole_process else None
    if args.record:
        from capkit.cache_files import write_output
        from capkit.speed import measurement_record
        record = measurement_record(args, {"in_process": result, "whole_process": whole})
        write_output(args.record, json.dumps(record, indent=1) + "\n")
    return 0


def _whole_process(cands: dict, refs: dict, repeat: int) -> dict:
    import tempfile
    from pathlib import Path

    from capkit.speed import whole_process
    with tempfile.TemporaryDirectory() as tmp:
        c, r = Path(tmp) / "candidates.json", Path(tmp) / "references.json"
        c.write_text(json.dumps(cands))
        r.write_text(json.dumps(refs))
        res = whole_process(c, r, repeat)
    print(f"\nwhole process (start-up, imports, reading the files, BLEU-4 + ROUGE-L + CIDEr-D "
          f"from raw text; median of {repeat}, the sides alternating): pycocoevalcap "
          f"{res['pycocoevalcap_s']:.2f} s, capkit score {res['capkit_s']:.2f} s: "
          f"{res['ratio']:.1f}x (fastest runs {res['pycocoevalcap_best_s']:.2f} s vs "
          f"{res['capkit_best_s']:.2f} s: {res['best_ratio']:.1f}x); corpus-score difference "
          f"{res['max_corpus_diff']:.2e}")
    print("both sides' bytecode compiled first, as pip leaves an installed package" if
          res["bytecode_compiled"] else "capkit's or pycocoevalcap's folder is read-only: their "
          "modules not yet compiled to bytecode were compiled at every start (slower)")
    return res
