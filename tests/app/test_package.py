"""The project installs as a package: a wheel with the `opttree` command and the assets inside."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources.
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".*", "tmp", "data", "checkpoints", "build", "*.egg-info",
                                                             "__pycache__", "benchmarks", "docs"))
    # No build isolation: the venv's setuptools builds it (no registry needed at test time).
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(src)], check=True, cwd=out, timeout=300)
    (whl,) = out.glob("opttree_explorer-*.whl")
    return whl


def test_wheel_has_entry_points_assets_and_no_tests(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry = next(n for n in names if n.endswith("entry_points.txt"))
        scripts = z.read(entry).decode()
    assert "opttree = opttree.cli:main" in scripts and "opttree-app = ui.app:main" in scripts
    for asset in ("opttree/assets/models.json", "opttree/assets/prompts/eval.jsonl",
                  "opttree/assets/prompts/train.jsonl", "opttree/assets/drafts/smollm2-eagle-head.safetensors",
                  "opttree/assets/drafts/smollm2-eagle-head.json", "opttree/assets/drafts/smollm2-classic.json",
                  "opttree/assets/length/smollm2-length-predictor.safetensors",
                  "opttree/trees/opt_tree.py", "opttree/decoding/verify.py", "viz/tree_figure.py", "ui/app.py"):
        assert asset in names, asset
    assert not any(n.startswith("tests/") for n in names)


def test_installed_command_runs_from_any_directory(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Only the installed copy is importable: not the checkout (no PYTHONPATH, a cwd outside it).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    script = target / "bin" / "opttree"
    assert script.exists()
    probe = subprocess.run([sys.executable, "-c", "import opttree, sys; print(opttree.__file__)"], env=env,
                           cwd=elsewhere, capture_output=True, text=True, timeout=60)
    assert probe.stdout.startswith(str(target))
    done = subprocess.run([sys.executable, str(script), "generate", "--prompt", "Say hi.", "--device", "cpu",
                           "--max-new-tokens", "4", "--nodes", "4", "--json"],
                          env=env, cwd=elsewhere, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"new_tokens": 4' in done.stdout and "smollm2-eagle-head" in done.stdout
