"""Training code for capkit's learned metrics. Inference code (``capkit.models``, ``capkit.metrics``)
never imports this package.

* ``corpus``: which captions a metric may learn from, with every benchmark's images held out;
* ``i2ce``: the two-stage auto-encoder training of I2CE (``capkit train i2ce``);
* ``leic``, ``leic_data``, ``caption_lm``: the LEIC critics, their human / machine / pathological
  training captions and the caption language model of ``leic_mc`` (``capkit train leic``);
  ``leic_world``: the world critics (``capkit train leic --world``);
* ``world_clip``: world-CLIP (``capkit train world-clip``); ``world_vilt``: world-ViLT's
  pre-training (``capkit train world-vilt``); ``umic``: UMIC's fine-tuning from it (``capkit
  train umic``); ``world_captioner``: the world captioner's three checkpoints (``capkit train
  world-captioner``).

Each recipe is one module named like the model it trains (ARCHITECTURE.md).
"""
