"""bench/torch_grouped.py without torch or a GPU: how it reads a `metrale bench --json` file (row
groups, the routing from expert_rows, rows it must refuse and why), the torch call forms, the
verdict against the 10 % tolerance, the weight rotation, and its --dry-run end to end."""

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_script():
    spec = importlib.util.spec_from_file_location(
        "torch_grouped", os.path.join(ROOT, "bench", "torch_grouped.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tg = _load_script()


def _row(model, op, tokens, impl, expert_rows, n, k, median_us=100.0, status="ok", **extra):
    row = {
        "model": model, "op": op, "tokens": tokens, "rows": sum(expert_rows), "n": n, "k": k,
        "projections": 2 if op == "gate_up" else 1, "experts": len(expert_rows),
        "top_k": 2, "experts_active": sum(1 for r in expert_rows if r), "impl": impl,
        "status": status, "expert_rows": expert_rows,
    }
    if status == "ok":
        row["median_us"] = median_us
    else:
        row["error"] = "boom"
    row.update(extra)
    return row


@pytest.fixture
def bench_json(tmp_path):
    rows_a = [3, 0, 5, 8]  # tiny: 4 experts, one empty, 16 rows (T = 8, top 2)
    rows = [
        _row("tiny", "gate_up", 8, "metrale", rows_a, 32, 64, 50.0),
        _row("tiny", "gate_up", 8, tg.ARM, rows_a, 32, 64, 104.0,
             kernel="CUTLASS sm90 ptr-array grouped, 64x128x128 ping-pong, cluster 2x1"),
        _row("tiny", "down", 8, "metrale", rows_a, 64, 32, 40.0),
        _row("tiny", "down", 8, tg.ARM, rows_a, 64, 32, status="error"),
        _row("tiny", "dense", 8, "metrale", rows_a, 64, 32),
        _row("other", "gate_up", 4, "metrale", [4, 4], 32, 64),  # no arm row: not compared
    ]
    old = _row("old", "down", 4, tg.ARM, [4, 4], 64, 32)
    del old["expert_rows"]
    rows.append(old)
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"metadata": {"commit": "abc"}, "rows": rows}))
    return str(path)


def test_groups_carry_shape_routing_and_times(bench_json):
    _, rows = tg.load_bench(bench_json)
    groups = tg.comparison_groups(rows)
    assert [(g["model"], g["op"], g["tokens"]) for g in groups] == [
        ("tiny", "gate_up", 8), ("tiny", "down", 8), ("old", "down", 4)]
    gate_up, down, old = groups
    assert gate_up["skip"] is None
    assert gate_up["expert_rows"] == [3, 0, 5, 8]
    assert (gate_up["rows"], gate_up["n"], gate_up["k"], gate_up["projections"]) == (16, 32, 64, 2)
    assert gate_up["arm_us"] == 104.0 and gate_up["metrale_us"] == 50.0
    assert "ping-pong" in gate_up["arm_kernel"]
    assert "did not run" in down["skip"] and "boom" in down["skip"]
    assert "expert_rows" in old["skip"]


def test_inconsistent_routing_is_refused(tmp_path):
    row = _row("tiny", "down", 8, tg.ARM, [3, 5], 64, 32)
    row["rows"] = 9
    groups = tg.comparison_groups([row])
    assert "sum to 8, not rows = 9" in groups[0]["skip"]


def test_offsets_are_cumulative_ends_with_empty_experts():
    assert tg.row_ends([3, 0, 5, 8]) == [3, 3, 8, 16]
    assert tg.row_ends([]) == []


def test_forms_fused_and_per_projection_for_gate_up():
    assert tg.forms({"n": 768, "projections": 2}) == {"fused": [1536], "per-projection": [768, 768]}
    assert tg.forms({"n": 2048, "projections": 1}) == {"single": [2048]}


@pytest.mark.parametrize("arm,torch_us,within,word", [
    (110.0, 100.0, True, "within"),
    (111.0, 100.0, False, "SLOWER"),
    (95.0, 100.0, True, "within"),
    (80.0, 100.0, True, "faster than torch by 20.0 %"),
])
def test_verdict_against_the_tolerance(arm, torch_us, within, word):
    ratio, ok, words = tg.verdict(arm, torch_us, 0.10)
    assert ratio == pytest.approx(arm / torch_us)
    assert ok is within
    assert word in words


def test_rotation_streams_several_l2_within_memory():
    l2 = 60 << 20
    assert tg.rotation_copies(800 << 20, l2, 100 << 30) == 2  # large weights: the minimum
    assert tg.rotation_copies(10 << 20, l2, 100 << 30) == 24  # 4 x 60 MiB / 10 MiB
    assert tg.rotation_copies(1 << 20, l2, 100 << 30) == tg.MAX_COPIES
    assert tg.rotation_copies(15 << 30, l2, 20 << 30) == 1  # only one copy fits


def test_summary_counts_compared_rows():
    results = [
        {"model": "m", "op": "gate_up", "tokens": 8, "rows": 16, "torch_us": 100.0,
         "torch_form": "fused", "arm_us": 105.0, "ratio": 1.05, "metrale_ratio": 1.5,
         "within_tolerance": True, "verdict": "within"},
        {"model": "m", "op": "down", "tokens": 8, "rows": 16, "skip": "the arm's row did not run"},
    ]
    lines = tg.summary_lines(results, 0.10)
    assert "1.050         1.500  within" in lines[1]
    assert "not compared: the arm's row did not run" in lines[2]
    assert lines[-1] == "1 of 1 compared rows within 10 % of torch"


def test_dry_run_needs_no_torch(bench_json, capsys):
    assert tg.main([bench_json, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "tiny gate_up T=8 rows=16 K=64 E=4 [fused: N=[64], per-projection: N=[32, 32]]" in out
    assert "arm 104.0 us" in out


def test_a_file_without_arm_rows_says_how_to_get_them(tmp_path, capsys):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"rows": [_row("tiny", "down", 8, "metrale", [1, 1], 64, 32)]}))
    assert tg.main([str(path), "--dry-run"]) == 1
    assert "bf16-grouped" in capsys.readouterr().out


def test_not_a_bench_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="no 'rows' list"):
        tg.load_bench(str(path))
