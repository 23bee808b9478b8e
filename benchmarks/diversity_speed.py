"""Speed of capkit.diversity on Wang & Chan's example file: 5,000 images x 10 captions.

    .venv/bin/python benchmarks/diversity_speed.py [--repeat 3] [--tokenizer ptb] [--pairs 20]

Times, from raw text: tokenising the 50,000 captions, building the default document
frequencies (COCO Karpathy-test references; once per process, then cached), and each of
Self-CIDEr, LSA and mBLEU on all images (median of --repeat runs, each on a fresh tokenisation
so that no n-gram index is reused). For scale, the authors' loop structure (a new CIDEr-D
scorer for each of the 55 pairs of each image; here capkit's own cider_d, called once per
pair) is timed on --pairs images and extrapolated to 5,000.

Speed is measured here, not in the unit tests (README, "Exactness and speed").
"""
from __future__ import annotations

import argparse

from capkit.speed import median_time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tokenizer", choices=["ptb", "split"], default="ptb")
    parser.add_argument("--pairs", type=int, default=20,
                        help="images for the one-scorer-per-pair baseline (0: skip)")
    args = parser.parse_args(argv)

    from capkit.data import load
    from capkit.diversity import (
        caption_sets,
        lsa_diversity,
        mbleu,
        reference_document_frequencies,
        self_cider,
    )
    from capkit.metrics import cider_d

    raw = load("diversity_wang_chan")
    tok = args.tokenizer
    t_df, df = median_time(lambda: reference_document_frequencies.__wrapped__(tok), 1)
    reference_document_frequencies(tok)          # fill the cache for the timed runs
    t_tok, _ = median_time(lambda: caption_sets(raw, tok), args.repeat)
    t_sc, sc = median_time(lambda: self_cider(caption_sets(raw, tok)), args.repeat)
    t_lsa, lsa = median_time(lambda: lsa_diversity(caption_sets(raw, tok)), args.repeat)
    t_mb, mb = median_time(lambda: mbleu(caption_sets(raw, tok)), args.repeat)

    def all_three():
        sets = caption_sets(raw, tok)
        return self_cider(sets), lsa_diversity(sets), mbleu(sets)
    t_all, _ = median_time(all_three, args.repeat)

    n_img, n_cap = len(raw), sum(map(len, raw.values()))
    print(f"diversity set: {n_img:,} images, {n_cap:,} captions, tokenizer={tok}, "
          f"median of {args.repeat}")
    rows = [("tokenise (caption_sets)", t_tok, ""),
            ("Self-CIDEr (incl. tokenise)", t_sc, f"mean {sc.corpus:.4f}"),
            ("LSA (incl. tokenise)", t_lsa, f"mean {lsa.corpus:.4f}"),
            ("mBLEU (incl. tokenise)", t_mb, f"mean 1-mBLEU-mix {mb.corpus:.4f}"),
            ("all three, one tokenisation", t_all, ""),
            ("default df, first call (then cached)", t_df, f"{df.n_documents:,} documents")]
    if args.pairs:
        ids = list(raw)[:args.pairs]

        def per_pair():
            for i in ids:
                caps = raw[i]
                for a in range(len(caps)):
                    for b in range(a, len(caps)):
                        cider_d([caps[a]], [[caps[b]]], document_frequency=df, tokenizer=tok)
        t_pp, _ = median_time(per_pair, 1)
        rows.append((f"one cider_d per pair, x{n_img / len(ids):.0f} from {len(ids)} images",
                     t_pp * n_img / len(ids), "the authors' loop structure"))
    width = max(len(r[0]) for r in rows)
    for name, seconds, note in rows:
        print(f"  {name:<{width}}  {seconds:8.2f} s  {note}")
    print(f"  {'total: df + all three':<{width}}  {t_df + t_all:8.2f} s  (budget 30 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
