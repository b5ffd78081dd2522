"""The written map matches the code: what README.md, docs/*.md and the module docstrings of opttree/, ui/ and
viz/ name in backticks exists. Files and folders, `python -m` modules, `make` targets, `opttree` subcommands
and their flags, OPTTREE_ environment variables, `module.name` / `path/module.name` / `Class.name` and bare
code names (a function, class or constant) are each looked up in the repository, without importing it.

A name from another project (transformers, vLLM, SGLang, Spec-Bench, MKL) goes in EXTERNAL_NAMES; a flag of
another program's command line in EXTERNAL_FLAGS."""

from __future__ import annotations

import ast
import builtins
import os
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
while not (ROOT / "pyproject.toml").exists():   # the repository root, wherever this file sits under tests/
    ROOT = ROOT.parent
SKIP = {"node_modules", "build", "dist", "__pycache__", "tmp", "data", "checkpoints", "artifacts", "logs"}
PACKAGES = ("opttree", "ui", "viz")
TOP = ("opttree/", "docs/", "tests/", "ui/", "viz/", "assets/", "benchmarks/", "tools/")
FILE_EXTS = ("py", "md", "json", "jsonl", "js", "css", "sh", "txt", "toml")
DATA_EXTS = ("log", "pt", "bin", "safetensors", "gguf", "png", "csv")   # a name ending so is a file, not code
# Paths that name files outside the repository or ones a run writes (data, scratch, other projects' trees).
OUTSIDE = ("data/", "tmp/", ".gpu/", "answers/", "vllm/", "python/", "evaluation/", "opt_classic/", "~", "$", "/")
EXTERNAL_NAMES = frozenset({
    "LlamaAttention", "DynamicCache", "masking_utils", "causal_mask_mapping", "pack_gqa",
    "from_pretrained", "SpeculativeConfig", "_handle_ngram", "_handle_eagle_family",
    "get_mean_speedup", "get_single_speedup", "cblas_sgemm_pack", "cblas_sgemm_compute",
    "timeout_s",   # the device tool's parameter (docs/drafts.md)
    "mc_sim_7b_63",   # EAGLE's default tree in SafeAILab/EAGLE (trees/static.py EAGLE_25)
})
EXTERNAL_FLAGS = frozenset({"--speculative-config", "--attention-backend", "--mean-report"})


@cache
def files() -> list[Path]:
    """The repository's files and folders, without the virtual environment, caches and generated data."""
    out = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP and not d.startswith(".")]   # .git, .hypothesis, caches
        out += [Path(folder) / n for n in dirs + names]
    return out


@cache
def repo() -> dict:
    """What the repository holds: its paths, its Python modules' names (per module and per class), the
    flags its parsers declare, the keys of its JSON assets and the variables of its shell scripts."""
    paths = {str(p.relative_to(ROOT)) for p in files()}
    modules, classes, names, flags = {}, {}, set(), set()
    for p in files():
        if p.suffix != ".py" or p == Path(__file__).resolve():   # this file's broken examples define nothing
            continue
        tree = ast.parse(p.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        here = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                here.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                here.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                here.add(node.attr)
            elif isinstance(node, ast.arg):
                here.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                here.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                here.update(re.findall(r"[A-Za-z_]\w*", node.value))
                flags.update(re.findall(r"(?<![\w-])--[a-z][\w-]*", node.value))
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, set()).update(
                    n.name if isinstance(n, (ast.FunctionDef, ast.ClassDef)) else getattr(n, "attr", None)
                    or getattr(n, "id", None) for n in ast.walk(node)
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Name, ast.Attribute)))
                if node.name in ("DecodeConfig", "ModelConfig"):   # each field is a flag (config.flag)
                    flags.update("--" + n.target.id.replace("_", "-") for n in node.body
                                 if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
        rel = p.relative_to(ROOT).with_suffix("")
        dotted = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        modules[dotted] = here
        names |= here | {rel.name}
    for p in files():
        if p.suffix == ".json" and p.stat().st_size < 2_000_000:
            names.update(re.findall(r'"([A-Za-z_][\w.]*)"\s*:', p.read_text()))
        elif p.suffix == ".sh":
            names.update(re.findall(r"\b[A-Z_][A-Z0-9_]+\b", p.read_text()))
    makefile = (ROOT / "Makefile").read_text()
    return {"paths": paths, "modules": modules, "classes": classes, "names": names, "flags": flags,
            "make": set(re.findall(r"^([\w-]+):", makefile, re.M)),
            "commands": set(re.findall(r'add_parser\(\s*"([\w-]+)"', "\n".join(
                (ROOT / f).read_text() for f in ("opttree/cli.py", "opttree/bench/cli.py"))))}


def path_exists(path: str, here: Path) -> bool:
    """`path` as written from the repository root, the citing file's folder or opttree/; a bare file name
    anywhere in the repository."""
    path = path.rstrip("/").split("::")[0]
    known = repo()["paths"]
    if "/" not in path:
        return any(p == path or p.endswith("/" + path) for p in known)
    for base in (ROOT, here, ROOT / "opttree"):
        try:
            if str((base / path).resolve().relative_to(ROOT)) in known:
                return True
        except ValueError:
            continue
    return False


def modules_named(name: str) -> list[str]:
    """The project modules `name` may mean: a dotted module, a path without .py, or a module's own name."""
    mods = repo()["modules"]
    name = name.replace("/", ".")
    return [m for m in mods if m == name or m.endswith("." + name)]


def check_name(dotted: str) -> list[str]:
    """`a.b.name`: the longest leading part that names a project module (or a project class) must define
    the rest's first name. A bare code name must be defined somewhere in the project."""
    parts = dotted.split(".")
    r = repo()
    if modules_named(dotted):
        return []
    for cut in range(len(parts) - 1, 0, -1):
        mods = modules_named(".".join(parts[:cut]))
        if mods:
            if any(parts[cut] in r["modules"][m] for m in mods) or modules_named(".".join(parts[:cut + 1])):
                return []
            return [f"{parts[cut]!r} is not defined in {' or '.join(mods)}"]
    if len(parts) > 1 and parts[0] in r["classes"]:
        return [] if parts[1] in r["classes"][parts[0]] else [f"class {parts[0]} has no {parts[1]!r}"]
    if len(parts) == 1 and parts[0] not in r["names"] and parts[0] not in EXTERNAL_NAMES:
        return [f"{parts[0]!r} is defined nowhere in the project"]
    return []


COMMAND = re.compile(r"(?:python3? -m (opttree[\w.]*)|(?<![\w/.-])opttree (?=[a-z-]+))\s*([a-z][\w-]*)?(.*)")
CODE_NAME = re.compile(r"[A-Za-z_][\w.]*(?:\(.*\))?")


def is_code_name(name: str) -> bool:
    """snake_case or UPPER_CASE with an underscore (5 characters or more: `x_i` is maths) or CamelCase: a name
    in the code."""
    return (len(name) >= 5 and "_" in name.strip("_") and name in (name.lower(), name.upper())
            or bool(re.fullmatch(r"_?[A-Z][a-z]+[A-Z]\w*", name)) and not hasattr(builtins, name))


def problems(span: str, here: Path) -> list[str]:
    """What is wrong with one backticked span (a command, a path, a name) cited from a file in `here`."""
    r, s, out = repo(), " ".join(span.split()), []
    if s.startswith(("http", "/?", "?")):
        return out
    m = re.match(r"make ([\w-]+)", s)
    if m and m.group(1) not in r["make"]:
        out.append(f"no make target {m.group(1)}")
    m = COMMAND.search(s)
    if m:
        module, sub = m.group(1) or "opttree", m.group(2)
        if not modules_named(module) or not module.startswith("opttree"):
            out.append(f"no module {module}")
        if module == "opttree" and sub and sub not in r["commands"]:
            out.append(f"no opttree subcommand {sub}")
        for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", m.group(3) or ""):
            if flag not in r["flags"]:
                out.append(f"no flag {flag}")
    elif re.fullmatch(r"--[a-z][\w-]*", s) and s not in r["flags"] and s not in EXTERNAL_FLAGS:
        out.append(f"no flag {s}")
    for env in re.findall(r"\bOPTTREE_[A-Z0-9_]+", s):
        if env not in r["modules"]["opttree.paths"] | r["modules"]["opttree.serve.settings"]:
            out.append(f"{env} is read by neither opttree/paths.py nor opttree/serve/settings.py")
    if " " in s or s.startswith(OUTSIDE):
        return out
    ext = s.rsplit(".", 1)[-1] if "." in s else ""
    m = re.fullmatch(r"([\w-]+(?:/[\w-]+)+)\.([A-Za-z_]\w*)", s)      # path/module.name
    if m and m.group(2) not in (*FILE_EXTS, *DATA_EXTS):
        module, name = m.groups()
        if not path_exists(module + ".py", here):
            return out + [f"no file {module}.py"]
        return out + check_name(f"{module}.{name}")
    if re.fullmatch(r"[\w./-]+/?", s) and (ext in FILE_EXTS and ("/" in s or ext in ("py", "md"))
                                           or s.startswith(TOP)):
        return out + ([] if path_exists(s, here) else [f"no file or folder {s}"])
    if CODE_NAME.fullmatch(s) and "/" not in s and ext not in (*FILE_EXTS, *DATA_EXTS):
        name = s.split("(")[0]
        if "." in name or is_code_name(name):
            out += check_name(name)
    return out


def spans(text: str) -> list[tuple[int, str]]:
    """(line, text) of each backticked span, and of each line of a fenced code block (a line ending in a
    backslash continues on the next)."""
    found = []
    for m in re.finditer(r"```[^\n]*\n(.*?)```", text, re.S):
        line = text.count("\n", 0, m.start()) + 2
        for i, code in enumerate(re.sub(r"\\\n", " ", m.group(1)).splitlines()):
            found.append((line + i, " ".join(code.split(" # ")[0].split())))
    prose = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for m in re.finditer(r"`([^`]+)`", prose):
        if "\n\n" not in m.group(1):
            found.append((prose.count("\n", 0, m.start()) + 1, m.group(1)))
    return found


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def sources() -> list[tuple[Path, str]]:
    """The Markdown documents (first), then each package module's docstring."""
    out = [(p, p.read_text()) for p in documents()]
    for package in PACKAGES:
        for p in sorted((ROOT / package).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(p.read_text()), clean=False)
            if doc:
                out.append((p, doc))
    return out


def test_every_file_command_flag_and_name_the_docs_cite_exists():
    wrong = [f"{p.relative_to(ROOT)}:{line}: {problem} (in `{span.strip()[:70]}`)"
             for p, text in sources() for line, span in spans(text) for problem in problems(span, p.parent)]
    assert not wrong, "\n".join(wrong)


def broken_links(path: Path, text: str) -> list[str]:
    """Relative Markdown links in `text` whose file is not there."""
    return [link for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
            if not link.startswith(("http:", "https:", "mailto:")) and not (path.parent / link).exists()]


def test_every_relative_link_in_the_docs_opens_a_file():
    wrong = {str(p.relative_to(ROOT)): links for p in documents() if (links := broken_links(p, p.read_text()))}
    assert not wrong, wrong
    assert broken_links(ROOT / "docs" / "usage.md", "[a](app.md) [b](../nowhere.md#x) [c](https://x.org/y)") == [
        "../nowhere.md"]


def test_the_check_sees_each_kind_of_broken_reference():
    docs = ROOT / "docs"
    broken = ["opttree/trees/no_such_module.py", "make no-such-target", "python -m opttree.no_such",
              "opttree no-such-command", "opttree generate --no-such-flag", "--no-such-flag", "OPTTREE_NO_SUCH",
              "trees/auto_size.NoSuchCost", "viz.serving.serving_figure", "serving_figure", "ServerSettings.nope",
              "NO_SUCH_CONSTANT",
              "engine/speculative.no_such_function", "../benchmarks/no_such.md"]
    for span in broken:
        assert problems(span, docs), span
    fine = ["opttree/trees/opt_tree.py", "make test-fast", "python -m opttree.bench.verdict RESULT A B --by category",
            "opttree generate --prompt x --nodes 25 --json", "--retrieval-corpus", "OPTTREE_LANE_SLOTS",
            "trees/auto_size.StepCost", "viz.serving.speedup_figure", "speedup_figure", "ServerSettings.from_env",
            "../benchmarks/README.md", "LlamaModel.forward", "/?preset=1&step=3", "data/spec_bench/question.jsonl"]
    for span in fine:
        assert not problems(span, docs), (span, problems(span, docs))
    assert spans("a `x`\n```bash\nopttree bench \\\n  --limit 8  # c\n```\n") == [(3, "opttree bench --limit 8"),
                                                                               (1, "x")]
    assert not EXTERNAL_NAMES & repo()["names"], "an EXTERNAL_NAMES entry is the project's own: take it out"
