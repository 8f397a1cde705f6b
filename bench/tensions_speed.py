"""Detector time on the LoCoMo false-alarm pass, for comparing two source trees side by side.

    python bench/tensions_speed.py                          # this tree
    PYTHONPATH=../main/src python bench/tensions_speed.py   # another tree's detector

The pairs are the ones ``bench/tensions.py`` checks (each turn against its 8 most similar
earlier turns of one conversation, cosine >= 0.3); prints CPU seconds and microseconds a pair
(process time, so other jobs on the machine count less; still, alternate the runs).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engrammar.recall.tensions as detector
from _common import load_locomo, locomo_turns
from _embcache import DiskCachedEmbedder
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.recall.tensions import Statement, detect_tension
from tensions import LOCOMO, MIN_SIMILARITY, locomo_pairs


def main() -> None:
    turns = locomo_turns(load_locomo(LOCOMO)[:10])
    vecs = DiskCachedEmbedder(MiniLMEmbedder()).embed([t["text"] for t in turns])
    pairs = locomo_pairs(turns, vecs)
    stm = [Statement(str(k), t["text"], float(k), t["speaker"]) for k, t in enumerate(turns)]
    started = time.process_time()
    flagged = sum(
        detect_tension(stm[j], stm[i], cos, MIN_SIMILARITY) is not None for j, i, cos in pairs
    )
    cpu = time.process_time() - started
    print(
        json.dumps(
            {
                "detector": detector.__file__,
                "pairs": len(pairs),
                "flagged": flagged,
                "cpu_s": round(cpu, 2),
                "us_per_pair": round(1e6 * cpu / max(1, len(pairs)), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
