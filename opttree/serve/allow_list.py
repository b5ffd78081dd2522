"""The allow-list of model pairs the app may load, read from configuration.

A public page must never turn a visitor's string into `from_pretrained(...)`: that downloads
arbitrary weights and, with remote code, runs arbitrary code. The app therefore offers only the ids
listed in `assets/models.json` (or the file named by OPTTREE_MODELS), and this module is the single
place that maps such an id to what the loader needs, and to what the page may show of it: a pair's public
names (`ModelEntry.public_target`, `public_name` for a draft) are what its traces, views and exports carry,
so the server's own paths stay private.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from opttree import paths
from opttree.config import MODEL_DRAFTERS, RANDOM_HEAD, SELF_DRAFT, TRAINING_FREE
from opttree.drafters.registry import KINDS
from opttree.errors import BadInput
from opttree.models.bundled import is_bundled

FUSION_DRAFTERS = (*MODEL_DRAFTERS, SELF_DRAFT)   # the ones retrieval fusion can join (a draft model)
DRAFTERS = (*FUSION_DRAFTERS, *TRAINING_FREE, "none")


def public_name(location: str) -> str:
    """What a visitor may see of a server's file or folder: its base name (`random`, `self` stay as they are)."""
    return os.path.basename(location.rstrip("/")) or location


@dataclass(frozen=True)
class ModelEntry:
    id: str
    label: str
    target: str
    drafter: str                    # a MODEL_DRAFTERS kind, self (the target drafts itself), recycling, lookup, none
    draft: str = ""                 # file path (resolved; the bundled draft where the list names none) or "random"
    trust_remote_code: bool = False
    retrieval: bool = False         # the app may run this pair with retrieval fusion (model drafters only)
    target_name: str = ""           # a folder target's public name (default: the folder's base name)

    @property
    def public_target(self) -> str:
        """The target as traces, views and exports name it: a local folder by its `target_name`, else its base
        name (the server's path stays private); a hub id or the bundled id as it is."""
        return (self.target_name or public_name(self.target)) if Path(self.target).is_absolute() else self.target

    @property
    def public_draft(self) -> str:
        """The draft as traces name it: its file name (`random` as it is; empty for a pair without one)."""
        return public_name(self.draft) if self.draft else ""

    def public_text(self, text: str) -> str:
        """A message about this entry (a load error) as a visitor may read it: its locations by their public names."""
        for location, name in ((self.draft, self.public_draft), (self.target, self.public_target)):
            text = text.replace(location, name) if location else text
        return text

    def missing_files(self) -> list[str]:
        """Draft files this entry needs that are not on disk (bundled drafts may not be trained yet)."""
        if self.drafter in MODEL_DRAFTERS and self.draft and self.draft != RANDOM_HEAD:
            return [] if Path(self.draft).exists() else [self.draft]
        return []


class Registry:
    def __init__(self, entries: list[ModelEntry], default: str, fallback: str | None = None):
        if not entries:
            raise BadInput("the model list is empty.")
        self.entries = {e.id: e for e in entries}
        if len(self.entries) != len(entries):
            raise BadInput("the model list repeats an id.")
        for name, value in (("default", default), ("fallback", fallback)):
            if value is not None and value not in self.entries:
                raise BadInput(f"the model list's {name} {value!r} is not one of its ids.")
        self.default, self.fallback = default, fallback
        _check_public_targets(entries)

    def choices(self) -> list[tuple[str, str]]:
        """(label, id) pairs for a dropdown."""
        return [(e.label, e.id) for e in self.entries.values()]

    def drafting_for(self, target: str, drafters=TRAINING_FREE) -> list[ModelEntry]:
        """Entries for `target` whose drafter is one of `drafters` (default: those without a draft model,
        Token Recycling and prompt lookup)."""
        return [e for e in self.entries.values() if e.drafter in drafters and e.target == target]

    def get(self, model_id) -> ModelEntry:
        if not isinstance(model_id, str) or model_id not in self.entries:
            shown = repr(model_id)[:80]
            raise BadInput(f"unknown model {shown}: choose one of {', '.join(self.entries)}.")
        return self.entries[model_id]

    def resolve(self, model_id) -> tuple[ModelEntry, str]:
        """The entry to load for `model_id`, and a notice when a stand-in replaces it.

        A bundled draft whose weights are missing falls back to the configured stand-in so the app
        keeps working (and says so) instead of failing every run.
        """
        entry = self.get(model_id)
        missing = entry.missing_files()
        if not missing:
            return entry, ""
        if self.fallback and self.fallback != entry.id and not self.entries[self.fallback].missing_files():
            stand_in = self.entries[self.fallback]
            return stand_in, (f"Draft weights for “{entry.label}” are not installed "
                              f"({public_name(missing[0])}); using “{stand_in.label}” instead.")
        raise BadInput(f"draft weights for {entry.id!r} are missing: {public_name(missing[0])}")


def _check_public_targets(entries: list[ModelEntry]) -> None:
    """BadInput unless each target has one public name and no two targets share one (an imported trace finds
    its pair by it), nor a folder the bundled target's (a trace naming it reads as the bundled target's)."""
    targets_of: dict[str, set[str]] = {}
    names_of: dict[str, set[str]] = {}
    for e in entries:
        targets_of.setdefault(e.public_target, set()).add(e.target)
        names_of.setdefault(e.target, set()).add(e.public_target)
    for name, targets in targets_of.items():
        if len(targets) > 1:
            raise BadInput(f"the model list shows two targets as {name!r}: give each folder target a "
                           "target_name of its own.")
        if is_bundled(name) and not all(map(is_bundled, targets)):
            raise BadInput(f"the model list shows a folder target as {name!r}, the bundled target's name: give it "
                           "a target_name of its own.")
    for names in names_of.values():
        if len(names) > 1:
            raise BadInput(f"the model list names one target {' and '.join(sorted(map(repr, names)))}: give every "
                           "entry of a target the same target_name.")


def _entry(raw: dict, base: Path) -> ModelEntry:
    if not isinstance(raw, dict):
        raise BadInput("each model in the model list must be an object.")
    for key in ("id", "target", "drafter"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise BadInput(f"a model in the model list lacks a text field {key!r}.")
    if raw["drafter"] not in DRAFTERS:
        raise BadInput(f"model {raw['id']!r}: drafter must be one of {', '.join(DRAFTERS)}.")
    if raw.get("retrieval") is True and raw["drafter"] not in FUSION_DRAFTERS:
        raise BadInput(f"model {raw['id']!r}: retrieval fusion needs a draft model "
                       f"({', '.join(FUSION_DRAFTERS)}), not {raw['drafter']!r}.")
    draft = str(raw.get("draft") or "")
    if draft and draft != RANDOM_HEAD and not Path(draft).is_absolute():
        draft = str((base / draft).resolve())
    target = raw["target"]   # a folder beside the list is read there; a hub id or the bundled id stays as it is
    if not Path(target).is_absolute() and (base / target).is_dir():
        target = str((base / target).resolve())
    if not draft and raw["drafter"] in MODEL_DRAFTERS:   # the loader's default: the bundled target's own draft
        try:
            draft = KINDS[raw["drafter"]].default_draft(target)
        except BadInput:
            raise BadInput(f"model {raw['id']!r}: the {raw['drafter']} drafter needs a \"draft\" for {target!r} "
                           "(only the bundled target has drafts of its own).") from None
    name = raw.get("target_name") or ""
    if not isinstance(name, str) or (name and not Path(target).is_absolute()):
        raise BadInput(f"model {raw['id']!r}: target_name is text, and names a local folder target only (a hub id "
                       "or the bundled id is shown as it is).")
    return ModelEntry(id=raw["id"], label=str(raw.get("label") or raw["id"]), target=target, target_name=name.strip(),
                      drafter=raw["drafter"], draft=draft,
                      trust_remote_code=raw.get("trust_remote_code") is True, retrieval=raw.get("retrieval") is True)


def load_registry(path: str | os.PathLike | None = None) -> Registry:
    """Read the allow-list: `path`, else $OPTTREE_MODELS, else assets/models.json."""
    path = Path(path) if path else paths.models_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot read the model list {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"the model list {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise BadInput(f"the model list {path} needs a 'models' array.")
    entries = [_entry(m, path.parent) for m in data["models"]]
    default = data.get("default") or entries[0].id if entries else None
    return Registry(entries, default, data.get("fallback"))
