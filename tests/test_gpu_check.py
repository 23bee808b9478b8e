"""benchmarks/gpu_check.py's machinery on the CPU (the GPU run itself is in
docs/measurements/gpu_check_h200.json): every world metric scored twice, the report complete."""
import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parity_report_on_the_cpu_is_complete_and_exact(gpu_check, tmp_path, shared_data):
    out = tmp_path / "report.json"
    assert gpu_check.main(["--device", "cpu", "--out", str(out), "--scenes", "3",
                           "--captions", "130", "--train", "none"]) == 0
    report = json.loads(out.read_text())
    assert report["complete"] is True
    parity = report["parity"]
    assert parity["n_candidates"] >= 3
    for name in gpu_check.WORLD_METRICS:
        assert "error" not in parity[name], parity[name]
        assert parity[name]["max_abs_diff"] == 0.0        # the same device twice
    adapter = report["adapter"]
    assert adapter["n_captions"] == 130
    for name in ("cider_d", "bleu_4", "i2ce"):              # three batches of at most 64
        assert adapter[name]["records_device"] == adapter[name]["value_device"] == "cpu"
        assert adapter[name]["corpus_diff"] == adapter[name]["max_per_caption_diff"] == 0.0


def test_an_out_folder_that_does_not_exist_is_refused_before_any_work(gpu_check, tmp_path):
    with pytest.raises(SystemExit):
        gpu_check.main(["--device", "cpu", "--out", str(tmp_path / "no" / "r.json")])
