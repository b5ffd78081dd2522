"""One rule says whether a model or draft argument names a hub model (`paths.is_hub_id`), for the EAGLE head
loader (`org/name` only), export-tree's check of its draft flags and the draft it names to the engines, and the
model loader; which arguments a drafter loads from the hub is its own (registry `hub_id`: a one-part name is a
hub id for the classic draft and the model loader, `gpt2`, a head file's name for the EAGLE loader, and the
early-exit head loads files only). The special names are each caller's own: `random` (the untrained head) and
the bundled ids are checked before the rule."""

from __future__ import annotations

import pytest

from opttree.cli import _check_drafts, served_draft
from opttree.config import ModelConfig
from opttree.errors import BadInput, ModelLoadError
from opttree.models.bundled import HUB_FALLBACK
from opttree.models.loading import model_folder
from opttree.nets.eagle_checkpoint import is_eagle_checkpoint

ABS = "<abs>"   # served as the folder's absolute path

# spec: (is_eagle_checkpoint, what export-tree serves for --ea-model-path, export-tree takes the flag,
#        model_folder takes it). `*`: the rows that failed before one rule served every caller.
CASES = {
    "org/name": (True, "org/name", True, True),               # a hub id
    "gpt2": (False, None, False, True),                        # * one part: a hub id; for the head loader a
    "random": (False, None, True, True),                       # file (here not there); `random`, the untrained
    "self": (False, None, False, True),                        # * head, is its own name; `self`, the app's pair,
                                                               # is a name like gpt2
    "smollm2-135m-instruct": (False, None, False, True),       # * the bundled target: a classic draft (its
                                                               # self pair), no head
    "eagle": (True, ABS, True, True),                          # a folder with config.json and weights
    "hf": (False, ABS, True, True),                            # a folder with config.json: a HF model
    "head": (False, None, True, False),                        # a folder holding this project's head file
                                                               # (no config.json: no model to load)
    "own.safetensors": (False, None, True, False),             # this project's draft file
    "gone.safetensors": (False, None, False, False),           # * a draft file that is not there (model_folder
    "org/gone.safetensors": (False, None, False, False),       # * asked the hub for it)
    "org/local": (False, ABS, True, True),                     # a local folder written like an id
    "a/b/c": (False, None, False, False),                      # three parts: a path that is not there
    "./gone": (False, None, False, False),                     # * a relative path, served as a hub id
    "../gone": (False, None, False, False),                    # *
    "/gone": (False, None, False, False),                      # * the head loader fetched it from the hub
    "a b/c": (False, None, False, False),                      # * (a space: no id)
    "org/.x": (False, None, False, False),                     # * a part starting or ending with . or -
    "org/name-": (False, None, False, False),                  # *
    "x.": (False, None, False, False),                         # *
    "a--b": (False, None, False, False),                       # * the hub forbids -- and ..
    ".hidden": (False, None, False, False),                    # *
    "org/repo.git": (False, None, False, False),               # the hub refuses a name ending .git, and a part
    "org/" + "n" * 97: (False, None, False, False),            # longer than 96 characters
}


@pytest.fixture
def local(tmp_path, monkeypatch):
    """The local files and folders of CASES, in the current folder."""
    for folder, files in {"eagle": ("config.json", "model.safetensors"), "hf": ("config.json",),
                          "head": ("head.safetensors",), "org/local": ("config.json",)}.items():
        (tmp_path / folder).mkdir(parents=True)
        for name in files:
            (tmp_path / folder / name).write_bytes(b"{}")
    (tmp_path / "own.safetensors").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def takes(check, spec) -> bool:
    try:
        check(spec)
        return True
    except (BadInput, ModelLoadError):      # a bad argument; a folder that holds no model
        return False


@pytest.mark.parametrize("spec", CASES)
def test_each_caller_reads_a_draft_argument_as_its_case_says(local, spec):
    eagle, served, checked, loads = CASES[spec]
    models = ModelConfig(ea_model_path=spec)
    assert is_eagle_checkpoint(spec) is eagle
    assert served_draft(models) == (str((local / spec).resolve()) if served == ABS else served)
    assert takes(lambda s: _check_drafts(ModelConfig(ea_model_path=s)), spec) is checked
    assert takes(model_folder, spec) is loads


@pytest.mark.parametrize("spec, classic, exit_head", [     # (served, taken) for each flag
    ("gpt2", ("gpt2", True), (None, False)),        # a one-part hub id: the classic loader's (transformers')
    ("org/name", ("org/name", True), (None, False)),  # the early-exit head loads a file only
    ("smollm2-135m-instruct", (HUB_FALLBACK, True), (None, False)),  # the bundled target drafting for itself:
                                                                     # served as its hub release; no head
    ("hf", (ABS, True), (ABS, True)),               # a model folder: served whichever flag names it
    ("gone.safetensors", (None, False), (None, False)),
])
def test_a_draft_flag_names_a_hub_model_only_where_its_drafter_loads_one(local, spec, classic, exit_head):
    for field, (served, taken) in (("draft_model_path", classic), ("exit_head_path", exit_head)):
        models = ModelConfig(**{field: spec})
        assert served_draft(models) == (str((local / spec).resolve()) if served == ABS else served)
        assert takes(_check_drafts, models) is taken
