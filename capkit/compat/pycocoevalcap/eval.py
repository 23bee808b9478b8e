"""pycocoevalcap's ``COCOEvalCap``: every metric of the COCO caption evaluation, without Java.

Give it a COCO ground-truth object and a results object (pycocotools' ``COCO`` and
``coco.loadRes(...)``, or anything with ``getImgIds()`` and ``imgToAnns``), set
``params["image_id"]`` if you like, and ``evaluate()`` fills ``eval`` (corpus scores),
``imgToEval`` (per image) and ``evalImgs`` exactly as the original does: same keys, same order,
same value types, the same numbers (``tests/test_compat_pycocoevalcap.py``), and prints the
same progress lines and scores.

Differences, all deliberate:

* the captions are split once and the n-gram index is shared by BLEU and CIDEr-D;
* per-image SPICE is stored under the right image. The original zips SPICE's scores, which
  come in sorted id order, with the unsorted ids (tylin/coco-caption#56), so its per-image
  SPICE belongs to other images whenever the ids are not sorted; its corpus SPICE is right.
* ``spice=False`` leaves SPICE out (it needs Java and Stanford CoreNLP 3.6.0; by default
  ``Spice()`` raises an error that says how to get them).
"""
from __future__ import annotations

from capkit.compat.pycocoevalcap.bleu.bleu import Bleu
from capkit.compat.pycocoevalcap.cider.cider import Cider
from capkit.compat.pycocoevalcap.inputs import captions
from capkit.compat.pycocoevalcap.meteor.meteor import Meteor
from capkit.compat.pycocoevalcap.rouge.rouge import Rouge
from capkit.compat.pycocoevalcap.spice.spice import Spice
from capkit.compat.pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer


class COCOEvalCap:
    def __init__(self, coco, cocoRes, *, spice: bool = True):
        self.evalImgs: list = []
        self.eval: dict = {}
        self.imgToEval: dict = {}
        self.coco = coco
        self.cocoRes = cocoRes
        self.params = {"image_id": coco.getImgIds()}
        self.spice = spice

    def evaluate(self) -> None:
        gts, res = {}, {}
        for img_id in self.params["image_id"]:
            gts[img_id] = self.coco.imgToAnns[img_id]
            res[img_id] = self.cocoRes.imgToAnns[img_id]

        print("tokenization...")
        tokenizer = PTBTokenizer()
        gts = tokenizer.tokenize(gts)
        res = tokenizer.tokenize(res)

        print("setting up scorers...")
        scorers = [(Bleu(4), ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"]), (Meteor(), "METEOR"),
                   (Rouge(), "ROUGE_L"), (Cider(), "CIDEr")]
        if self.spice:
            scorers.append((Spice(), "SPICE"))

        caps = captions(gts, res)               # split once, shared by the scorers
        for scorer, method in scorers:
            print("computing %s score..." % scorer.method())
            if hasattr(scorer, "score_captions"):
                score, scores = scorer.score_captions(caps)
            else:
                score, scores = scorer.compute_score(gts, res)
            # SPICE returns its per-image scores in sorted id order (see the module docstring)
            ids = sorted(gts.keys()) if scorer.method() == "SPICE" else gts.keys()
            if isinstance(method, list):
                for sc, scs, m in zip(score, scores, method):
                    self.setEval(sc, m)
                    self.setImgToEvalImgs(scs, ids, m)
                    print("%s: %0.3f" % (m, sc))
            else:
                self.setEval(score, method)
                self.setImgToEvalImgs(scores, ids, method)
                print("%s: %0.3f" % (method, score))
        self.setEvalImgs()

    def setEval(self, score, method) -> None:
        self.eval[method] = score

    def setImgToEvalImgs(self, scores, imgIds, method) -> None:
        for img_id, score in zip(imgIds, scores):
            if img_id not in self.imgToEval:
                self.imgToEval[img_id] = {"image_id": img_id}
            self.imgToEval[img_id][method] = score

    def setEvalImgs(self) -> None:
        self.evalImgs = [ev for _, ev in self.imgToEval.items()]
